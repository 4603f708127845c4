import Foundation

/// The device's registration with the hub (the design's Initialization module and FCM subscribe, unsubscribe,
/// getSubscribed, now through the hub's device API).
///
/// Every step is saved before the next one starts, so set-up interrupted at any point resumes on the next
/// `start(token:cube:)`: a registration whose answer was lost is made again (the hub answers a known FCM token with
/// a new device, which takes over its subscriptions, unless the request carries the device's secret), and
/// unfinished initial subscriptions are completed. The secret is kept in a `DeviceSecretStore`, never in the
/// database.
actor DeviceRegistration {
    let hub: HubConnection
    private let database: LocalDatabase
    /// Where the device's secret is kept.
    private let secrets: any DeviceSecretStore
    private let platform: Platform
    private let locale: String?
    private let appVersion: String?
    private var record: DeviceRecord?
    private var recordLoaded = false
    /// The re-registration under way after a 401, shared by every call that met the 401.
    private var renewal: Task<Result<DeviceRecord, MSIKitError>, Never>?
    /// The topics the hub last said the device is subscribed to, kept up to date by subscribe and unsubscribe, so
    /// that showing a message's topic does not cost a request each time.
    private var knownTopics: Set<String>?

    init(
        hub: HubConnection, database: LocalDatabase, secrets: any DeviceSecretStore, platform: Platform,
        locale: String?, appVersion: String?
    ) {
        self.hub = hub
        self.database = database
        self.secrets = secrets
        self.platform = platform
        self.locale = locale
        self.appVersion = appVersion
    }

    /// The saved state.
    func state() async throws(MSIKitError) -> RegistrationState {
        try await current()?.state ?? .notRegistered
    }

    /// Registers with `token` unless registered with this hub, tells the hub a new token, and finishes the
    /// initial subscriptions if they are not done.
    func start(token: String, cube: CubeCache) async throws(MSIKitError) -> RegistrationState {
        var device: DeviceRecord
        if let saved = try await current(), saved.hub == hub.base {
            device = saved
            if device.registration != token { device = try await updateRegistration(token: token) }
        } else {
            device = try await register(token: token, keeping: nil)
        }
        if device.phase == .registered { device = try await initialise(cube: cube) }
        return device.state
    }

    /// Tells the hub the device's new FCM token (`PUT /device/:id`), registering it if it is not registered yet.
    @discardableResult
    func updateRegistration(token: String) async throws(MSIKitError) -> DeviceRecord {
        guard let saved = try await current(), saved.hub == hub.base else {
            return try await register(token: token, keeping: nil)
        }
        if saved.registration == token { return saved }
        do {
            let body = DeviceUpdate(registration: token, locale: locale, appVersion: appVersion)
            let _: DeviceInfo = try await hub.json(
                "PUT", ["device", saved.deviceID], headers: HubConnection.bearer(saved.deviceSecret), body: body)
        } catch  where error.code == .unauthenticated || error.code.hubStatus == 404 {
            // The hub no longer takes this secret or knows this device: registering the new token mends both.
            return try await register(token: token, keeping: saved)
        }
        var updated = try await current() ?? saved
        updated.registration = token
        try await save(updated)
        return updated
    }

    /// Runs a device route with the device's credentials; when the hub answers 401, registers again with the saved
    /// token (which yields a new device, or the same one with a fresh secret) and runs it once more.
    /// - Throws: `.notRegistered` before the first registration, or what `body` throws.
    func authorized<T: Sendable>(
        _ body: @Sendable (_ deviceID: String, _ secret: String) async throws(MSIKitError) -> T
    ) async throws(MSIKitError) -> T {
        guard let device = try await current(), device.hub == hub.base else {
            throw MSIKitError(.notRegistered, "The device has not registered with the hub yet.")
        }
        do {
            return try await body(device.deviceID, device.deviceSecret)
        } catch  where error.code == .unauthenticated {
            let renewed = try await renew(after: device)
            return try await body(renewed.deviceID, renewed.deviceSecret)
        }
    }

    /// The device's subscriptions (`GET /device/:id/subscriptions`).
    func subscriptions() async throws(MSIKitError) -> [Subscription] {
        struct Answer: Decodable { var subscriptions: [Subscription] }
        let hub = hub
        let list = try await authorized { (id, secret) throws(MSIKitError) in
            let answer: Answer = try await hub.json(
                "GET", ["device", id, "subscriptions"], headers: HubConnection.bearer(secret))
            return answer.subscriptions
        }
        knownTopics = Set(list.map(\.topicKey))
        return list
    }

    /// The topics the device is subscribed to: as last read from the hub, or read now if never read.
    func subscribedTopics() async throws(MSIKitError) -> Set<String> {
        if let knownTopics { return knownTopics }
        return Set(try await subscriptions().map(\.topicKey))
    }

    /// Subscribes the device to a topic (`PUT /device/:id/subscriptions/:topicKey`).
    func subscribe(_ topicKey: String) async throws(MSIKitError) -> Subscription {
        let hub = hub
        let subscription: Subscription = try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json(
                "PUT", ["device", id, "subscriptions", topicKey], headers: HubConnection.bearer(secret))
        }
        knownTopics?.insert(subscription.topicKey)
        return subscription
    }

    /// Unsubscribes the device from a topic (`DELETE /device/:id/subscriptions/:topicKey`).
    func unsubscribe(_ topicKey: String) async throws(MSIKitError) {
        let hub = hub
        try await authorized { (id, secret) throws(MSIKitError) in
            _ = try await hub.send(
                "DELETE", ["device", id, "subscriptions", topicKey], headers: HubConnection.bearer(secret))
        }
        knownTopics?.remove(topicKey)
    }

    /// Binds the device to the person `assertion` names (`PUT /device/:id/person`); returns the person id the hub
    /// stored.
    func bind(assertion: String) async throws(MSIKitError) -> String {
        struct Body: Encodable, Sendable { var assertion: String }
        struct Answer: Decodable, Sendable { var person: String }
        let hub = hub
        let answer: Answer = try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json(
                "PUT", ["device", id, "person"], headers: HubConnection.bearer(secret),
                body: Body(assertion: assertion))
        }
        return answer.person
    }

    /// A nonce for the device's next assertion (`POST /device/:id/person/nonce`).
    func bindingNonce() async throws(MSIKitError) -> BindingNonce {
        struct Answer: Decodable, Sendable {
            var nonce: String
            var expiresAt: Int64
            enum CodingKeys: String, CodingKey { case nonce, expiresAt = "expires_at" }
        }
        let hub = hub
        let answer: Answer = try await authorized { (id, secret) throws(MSIKitError) in
            try await hub.json("POST", ["device", id, "person", "nonce"], headers: HubConnection.bearer(secret))
        }
        return BindingNonce(
            value: answer.nonce, expiresAt: Date(timeIntervalSince1970: Double(answer.expiresAt) / 1000))
    }

    /// Unbinds the device from its person (`DELETE /device/:id/person`).
    func unbind() async throws(MSIKitError) {
        let hub = hub
        try await authorized { (id, secret) throws(MSIKitError) in
            _ = try await hub.send("DELETE", ["device", id, "person"], headers: HubConnection.bearer(secret))
        }
    }

    // MARK: - Steps

    /// `POST /device`; saves the id and secret. `previous` is the device's record (the one a 401 or 404 invalidated):
    /// its secret goes with the request, the proof the hub asks before it gives a known token's device back with a
    /// new secret (200), and its phase is kept then. Any other answer is a new device (201): the hub retired the one
    /// that had the token, and the new one is initialised afresh.
    private func register(token: String, keeping previous: DeviceRecord?) async throws(MSIKitError) -> DeviceRecord {
        let body = NewDevice(registration: token, platform: platform, locale: locale, appVersion: appVersion)
        var headers: [String: String] = [:]
        if let appKey = hub.appKey { headers["X-App-Key"] = appKey }
        if let previous, previous.hub == hub.base, !previous.deviceSecret.isEmpty {
            headers.merge(HubConnection.bearer(previous.deviceSecret)) { _, secret in secret }
        }
        let (answer, status) = try await hub.exchange(
            "POST", ["device"], headers: headers, body: body,
            as: NewDeviceAnswer.self)
        let same = status == 200 && previous?.deviceID == answer.deviceID
        let phase = same ? previous?.phase ?? .registered : .registered
        let device = DeviceRecord(
            hub: hub.base, deviceID: answer.deviceID, deviceSecret: answer.deviceSecret, registration: token,
            phase: phase)
        try await save(device)
        return device
    }

    /// initSubs: subscribes the device to every Forced and Recommended subject it is not subscribed to yet, then
    /// marks it initialised. A subject removed since the cube was read (404 `topic_not_found`) is skipped.
    private func initialise(cube: CubeCache) async throws(MSIKitError) -> DeviceRecord {
        let subjects = try await cube.cube(refresh: false).subjects.filter(\.level.isAutomatic)
        let subscribed = Set(try await subscriptions().map(\.topicKey))
        for subject in subjects where !subscribed.contains(subject.topicKey) {
            do {
                _ = try await subscribe(subject.topicKey)
            } catch  where error.code == .topicNotFound {
                continue
            }
        }
        guard var device = try await current() else {
            throw MSIKitError(.notRegistered, "The device has not registered with the hub yet.")
        }
        device.phase = .initialised
        try await save(device)
        return device
    }

    /// Registers again with the token of a record whose secret the hub refused, once for all concurrent callers.
    private func renew(after refused: DeviceRecord) async throws(MSIKitError) -> DeviceRecord {
        if let saved = try await current(), saved.deviceSecret != refused.deviceSecret { return saved }
        if let renewal { return try await renewal.value.get() }
        let task = Task { () -> Result<DeviceRecord, MSIKitError> in
            do throws(MSIKitError) {
                return .success(try await self.register(token: refused.registration, keeping: refused))
            } catch {
                return .failure(error)
            }
        }
        renewal = task
        defer { renewal = nil }
        return try await task.value.get()
    }

    /// Forgets the device here: its secret removed from the store, nothing remembered of its record (the database's
    /// rows are the caller's to delete). The next `start` registers a new device.
    /// - Throws: `.database` when the secret cannot be removed.
    func forget() async throws(MSIKitError) {
        if let device = try? await current() { try secrets.remove(for: device.secretAccount) }
        record = nil
        recordLoaded = false
    }

    private func current() async throws(MSIKitError) -> DeviceRecord? {
        if !recordLoaded {
            record = try await DeviceRecord.load(from: database, secrets: secrets)
            recordLoaded = true
        }
        return record
    }

    /// Saves `device`; the secret of a device it replaces is forgotten (a failure to forget one leaves a secret
    /// the hub no longer takes).
    private func save(_ device: DeviceRecord) async throws(MSIKitError) {
        try await device.save(to: database, secrets: secrets)
        if let replaced = record, replaced.secretAccount != device.secretAccount {
            try? secrets.remove(for: replaced.secretAccount)
        }
        record = device
        recordLoaded = true
    }
}

// MARK: - The device API's bodies

/// `POST /device`'s body.
private struct NewDevice: Encodable, Sendable {
    var registration: String
    var platform: Platform
    var locale: String?
    var appVersion: String?

    enum CodingKeys: String, CodingKey {
        case registration, platform, locale, appVersion = "app_version"
    }
}

/// `POST /device`'s answer (its `subscriptions` are read again at initialisation, so they are not decoded).
private struct NewDeviceAnswer: Decodable, Sendable {
    var deviceID: String
    var deviceSecret: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", deviceSecret = "device_secret"
    }
}

/// `PUT /device/:id`'s body.
private struct DeviceUpdate: Encodable, Sendable {
    var registration: String?
    var locale: String?
    var appVersion: String?

    enum CodingKeys: String, CodingKey {
        case registration, locale, appVersion = "app_version"
    }
}

/// `GET` and `PUT /device/:id`'s answer.
private struct DeviceInfo: Decodable, Sendable {
    var deviceID: String
    var state: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", state
    }
}

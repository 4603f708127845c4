import Foundation

/// The mobile app's entry point to MSI: one per app, created at launch.
///
/// ```swift
/// let client = try MSIClient(configuration: .init(hub: hubURL, directory: supportFolder), push: firebase)
/// try await client.start()                    // register or resume, clear old messages, catch up
/// await client.run { received in              // until cancelled: pushes and token changes
///     if case .alert(let title, let body, _) = received { showNotification(title, body) }
/// }
/// ```
///
/// Each new message is reported to the hub as `received` by the library itself; the app reports what the person
/// does with `opened(msiKey:)` and `acknowledge(msiKey:response:)`. Receipts made offline wait in the library's file
/// and go out with the next one sent, at `start()`, or when the app calls `sendReceipts()` (for example when the
/// network comes back).
///
/// Everything the library keeps lives in the configuration's folder: the messages, the receipts not yet sent and
/// the device's registration in `msikit.sqlite`, the cube's last copy in `cube.json`; but the device's secret, which is in the Keychain on
/// Apple platforms and in `msikit.device-secret` (mode 0600) elsewhere. Calls are safe from any task.
public final class MSIClient: Sendable {
    /// The messages received so far (the design's Message module).
    public let store: MessageStore
    /// The feature flags set by messages that are not shown (`"display": false`); see `FlagStore`.
    public let flags: FlagStore

    /// The last daily digest the device received (`Digest`: its summary, exact count and list); nil before the first.
    /// A push whose data has `audience` "digest" is kept here by `receive(payload:)`, never stored as a message.
    /// - Throws: `.database`.
    public func lastDigest() async throws(MSIKitError) -> Digest? {
        try await DigestStore(database: store.database).last()
    }
    private let push: any PushProvider
    private let hub: HubConnection
    let cubeCache: CubeCache
    let registration: DeviceRegistration
    /// The receipts not yet sent to the hub.
    let receipts: ReceiptQueue
    /// The device's locale, whose language translated messages and banners are shown in.
    private let locale: String?

    /// Opens the library's files in `configuration.directory` (creating the folder) and prepares the hub's client;
    /// sends nothing yet.
    /// - Throws: `MSIKitError` `.database` when the folder or the database cannot be opened.
    public init(configuration: Configuration, push: any PushProvider) throws(MSIKitError) {
        var path: String?
        if let directory = configuration.directory {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw MSIKitError(.database, "The folder \(directory.path) could not be created.", underlying: error)
            }
            path = directory.appendingPathComponent("msikit.sqlite").path
        }
        store = try MessageStore(path: path, clock: configuration.clock, timeZone: configuration.timeZone)
        self.push = push
        hub = HubConnection(hub: configuration.hub, appKey: configuration.appKey)
        cubeCache = CubeCache(hub: hub, directory: configuration.directory)
        receipts = ReceiptQueue(database: store.database, clock: configuration.clock)
        flags = FlagStore(database: store.database, clock: configuration.clock)
        locale = configuration.locale
        registration = DeviceRegistration(
            hub: hub, database: store.database, secrets: defaultSecretStore(directory: configuration.directory),
            platform: configuration.platform, locale: configuration.locale, appVersion: configuration.appVersion)
    }

    // MARK: - Start and run

    /// Starts the app's session (init): clears old messages, registers the device or resumes an interrupted
    /// registration, tells the hub a changed token, then catches up and sends the receipts waiting (those of the
    /// messages caught up too); returns the messages caught up, oldest first.
    ///
    /// Old messages are cleared first so that the stored list is right even when the hub cannot be reached.
    /// - Throws: `.pushProvider`, `.network`, the hub's refusals, `.database`.
    @discardableResult
    public func start() async throws(MSIKitError) -> [ReceivedMessage] {
        try await store.clearOldMessages()
        try await flags.forgetApplied(before: MessageStore.milliseconds(store.oldMessagesCutoff))
        try await flags.dropExpired()
        try await register()
        return try await catchUp()
    }

    /// Registers the device with the push provider's current token, or resumes an interrupted registration, and
    /// subscribes it to the Forced and Recommended subjects once (init, initSubs); `start()` does this too.
    /// - Throws: `.pushProvider`, `.network`, the hub's refusals, `.database`.
    @discardableResult
    public func register() async throws(MSIKitError) -> RegistrationState {
        let token: String
        do {
            token = try await push.currentToken()
        } catch {
            throw MSIKitError(.pushProvider, "The push provider gave no token: \(error)", underlying: error)
        }
        return try await registration.start(token: token, cube: cubeCache)
    }

    /// Handles pushes and token changes until the push provider's payload stream ends or the task is cancelled
    /// (listen): each new message is passed to `onMessage`, each failure to `onError` (a payload whose message
    /// could not be read is caught up at the next `start()`).
    /// `onRead`, when given, is called too for each message the person read on another device, with their unread
    /// count now (the app's badge).
    public func run(
        onMessage: @escaping @Sendable (ReceivedMessage) async -> Void,
        onRead: (@Sendable (_ msiKey: String, _ unread: Int?) async -> Void)? = nil,
        onError: @escaping @Sendable (MSIKitError) async -> Void = { _ in }
    ) async {
        // Each child says whether it was the payloads' loop: that one ends the run; the token stream may go on for
        // ever, or end at once.
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await payload in self.push.payloads {
                    do throws(MSIKitError) {
                        if let received = try await self.receive(payload: payload) {
                            await onMessage(received)
                            if case .read(let message, let unread) = received { await onRead?(message.msiKey, unread) }
                        }
                    } catch {
                        await onError(error)
                    }
                }
                return true
            }
            group.addTask {
                for await token in self.push.tokenChanges {
                    do throws(MSIKitError) {
                        try await self.updateRegistration(token: token)
                    } catch {
                        await onError(error)
                    }
                }
                return false
            }
            while let payloadsEnded = await group.next() {
                if payloadsEnded { group.cancelAll() }
            }
        }
    }

    // MARK: - Listener and catch-up

    /// Stores the message of one FCM data payload once and says what to show; nil when it was stored already
    /// (for example an Alert's second component). A payload with only `msi_key`, or with `truncated` "true", is
    /// completed from `GET /message/:msiKey`, or by a catch-up for a message to persons or groups (private). A new
    /// message's `received` receipt is queued and sent (offline, it waits). A translated message is stored in the
    /// configuration's locale's language when it has it. A message not to be shown (`display` "false") is never
    /// stored nor shown: its data goes to `flags`, and nil is returned.
    /// - Throws: `.invalidPayload`, `.network`, the hub's refusals, `.database`.
    public func receive(payload: [String: String]) async throws(MSIKitError) -> ReceivedMessage? {
        let received = try await Listener(
            store: store, hub: hub, registration: registration, receipts: receipts,
            flags: flags, locale: locale
        ).receive(payload: payload)
        await sendReceiptsIfPossible()
        return received
    }

    /// Stores every message the hub has for this device since the newest one stored, page by page, and reports each
    /// new one `received` (a message not to be shown goes to `flags` instead); returns the new ones, oldest first.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals, `.database`.
    @discardableResult
    public func catchUp() async throws(MSIKitError) -> [ReceivedMessage] {
        let caughtUp = try await CatchUp(
            store: store, hub: hub, registration: registration, receipts: receipts,
            flags: flags, locale: locale
        ).run()
        await sendReceiptsIfPossible()
        return caughtUp
    }

    // MARK: - Banners

    /// The banners to show at launch, newest first: the hub's live downtime notices, greetings and non-dismissible
    /// messages, whenever the app was installed, each in the device's language (the configuration's locale) when the
    /// sender translated it, with its poster, kind, whether it may be dismissed and its expiry. A registered device
    /// asks for its own (its subscriptions, its person's and groups' messages); before registration the app asks for
    /// those of `topicKeys` (default: the cube's Forced and Recommended subjects), without credentials.
    /// - Parameters:
    ///   - topicKeys: the topics of an app not registered (at most 100 are asked); ignored once registered.
    ///   - limit: at most this many banners, 1 to 50.
    /// - Throws: `.invalidArgument` for a limit outside 1...50, `.network`, the hub's refusals.
    public func activeBroadcasts(topicKeys: [String]? = nil, limit: Int = 20) async throws(MSIKitError) -> [Banner] {
        try await ActiveBroadcasts(hub: hub, registration: registration, cube: cubeCache, locale: locale)
            .run(topicKeys: topicKeys, limit: limit)
    }

    // MARK: - Receipts

    /// Reports that the person opened the message `msiKey` in the app (once per message: later calls change
    /// nothing). Queued, then sent if the hub can be reached; offline, it waits for the next send.
    /// - Throws: `.database` only: a failure to send leaves the receipt queued.
    public func opened(msiKey: String) async throws(MSIKitError) {
        try await receipts.enqueue(msiKey, .opened)
        await sendReceiptsIfPossible()
    }

    /// Reports that the person acknowledged the message `msiKey` ("I have seen it"), with `response` when the
    /// message offered answers (`"I'm safe"`, `"I need help"`: one of the sender's, as given) or any short text
    /// when it offered none. Call it from the button the app shows; the first acknowledgement of a message counts,
    /// later ones change nothing, but for an invitation that lets people change their answer (`changeable`), where
    /// the latest counts. Queued, then sent if the hub can be reached; offline, it waits for the next send.
    /// - Throws: `.invalidArgument` for a response longer than 200 bytes of UTF-8; `.database`. A failure to send
    ///   leaves the receipt queued; a response the message did not offer is refused by the hub and dropped.
    public func acknowledge(msiKey: String, response: String? = nil) async throws(MSIKitError) {
        try await receipts.enqueue(msiKey, .acknowledged, response: response.flatMap { $0.isEmpty ? nil : $0 })
        try await store.markAcknowledged(msiKey: msiKey)
        await sendReceiptsIfPossible()
    }

    /// Reports that the person read the message `msiKey` (a chat's list showed it) without opening it: it leaves
    /// their unread on every device, whose notifications of it go. Queued, then sent if the hub can be reached.
    /// (`opened(msiKey:)` does the same for a message opened in the app.)
    /// - Throws: `.database` only: a failure to send leaves the receipt queued.
    public func markRead(msiKey: String) async throws(MSIKitError) {
        try await receipts.enqueue(msiKey, .read)
        await sendReceiptsIfPossible()
    }

    /// The person's unread messages to persons, groups and rooms, as the hub counts them on all of their devices:
    /// in all, and per group.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func unreadCounts() async throws(MSIKitError) -> UnreadCounts {
        try await registration.unreadCounts()
    }

    /// Answers an acknowledgement from a notification's action (`AckActions`) without opening the app: `identifier`
    /// is the action tapped, `payload` the notification's data. The response is the message's, by the action's
    /// index (from the stored message, else the payload's `ack_responses`). Returns false, doing nothing, for an
    /// action that is not an acknowledgement's.
    /// - Throws: `.invalidArgument` for a response index the message does not offer; as `acknowledge`.
    @discardableResult
    public func handleAction(identifier: String, payload: [String: String]) async throws(MSIKitError) -> Bool {
        guard let answer = AckActions.responseIndex(of: identifier), let msiKey = payload["msi_key"] else {
            return false
        }
        guard let index = answer else {
            try await acknowledge(msiKey: msiKey)
            return true
        }
        var responses = try await store.message(msiKey: msiKey)?.acknowledgementResponses ?? []
        if responses.isEmpty { responses = payload["ack_responses"].flatMap(PushPayload.responses(json:)) ?? [] }
        guard responses.indices.contains(index) else {
            throw MSIKitError(.invalidArgument, "The message offers no response \(index + 1).")
        }
        try await acknowledge(msiKey: msiKey, response: responses[index])
        return true
    }

    /// Sends every receipt waiting (made offline, or whose send failed); returns how many went. Call it when the
    /// network comes back; `start()`, each new message and each receipt send them too.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals, `.database`; what was not sent stays queued.
    @discardableResult
    public func sendReceipts() async throws(MSIKitError) -> Int {
        try await receipts.send(hub: hub, registration: registration)
    }

    /// How many receipts wait to be sent.
    /// - Throws: `.database`.
    public func pendingReceipts() async throws(MSIKitError) -> Int {
        try await receipts.count()
    }

    /// Sends the receipts waiting if the hub can be reached; a failure leaves them queued for a later send.
    private func sendReceiptsIfPossible() async {
        _ = try? await receipts.send(hub: hub, registration: registration)
    }

    // MARK: - Registration

    /// How far the device's set-up with the hub has got.
    /// - Throws: `.database`.
    public func registrationState() async throws(MSIKitError) -> RegistrationState {
        try await registration.state()
    }

    /// Tells the hub the device's new FCM token (`PUT /device/:id`); registers the device if it is not yet.
    /// - Throws: `.network`, the hub's refusals, `.database`.
    public func updateRegistration(token: String) async throws(MSIKitError) {
        try await registration.updateRegistration(token: token)
    }

    // MARK: - Person

    /// Binds the device to the person a signed assertion from the school's sign-in names (an `id_token` or the
    /// school backend's JWT; sign-in is the app's); returns the person id the hub stored. Call it after each sign-in.
    /// - Throws: `.invalidAssertion` (the message says why), `.assertionReplayed` (it bound a device already: ask the
    ///   sign-in for a new one), `.notRegistered`, `.network`, the hub's other refusals.
    @discardableResult
    public func bind(assertion: String) async throws(MSIKitError) -> String {
        try await registration.bind(assertion: assertion)
    }

    /// A nonce for the next `bind(assertion:)`, when the hub requires one (`PERSON_ASSERTION_NONCE=required`): the
    /// assertion's `nonce` claim must be its `value`. Each nonce binds once; a new one replaces the last.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func bindingNonce() async throws(MSIKitError) -> BindingNonce {
        try await registration.bindingNonce()
    }

    /// Unbinds the device from its person (sign-out): it no longer receives that person's messages.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func unbind() async throws(MSIKitError) {
        try await registration.unbind()
    }

    // MARK: - Rooms

    /// Posts `message` to room `group` (a group whose members post: `posting: members`), titled `title` (the
    /// room's name when nil), with `data` for the app; returns the post's `msi_key`. Every other member's devices
    /// get it as one notification of the room's thread; this person's devices do not.
    /// - Throws: `.hub(status: 403, code: "not_a_member" | "posting_not_allowed")`, `.hub(status: 429, ...)` past
    ///   the hub's posts a minute, `.notRegistered`, `.network`, the hub's other refusals.
    @discardableResult
    public func post(toGroup group: String, message: String, title: String? = nil, data: [String: String] = [:])
        async throws(MSIKitError) -> String
    {
        try await registration.post(toGroup: group, message: message, title: title, data: data)
    }

    /// Leaves room `group`, where the room lets members leave (`self_leave`).
    /// - Throws: `.hub(status: 403, code: "leave_not_allowed")`, `.invalidArgument` for an unbound device,
    ///   `.notRegistered`, `.network`, the hub's other refusals.
    public func leave(group: String) async throws(MSIKitError) {
        try await registration.leave(group: group)
    }

    /// Mutes room or group `group` for the person until `until` (nil: until `unmute(group:)`), on every device of
    /// theirs and any new one: its messages arrive as information (stored, in catch-up, never shown as an Alert);
    /// time-sensitive and critical ones still sound.
    /// - Throws: `.hub(status: 403, code: "not_a_member")` for an unbound device, `.hub(status: 404, ...)` for an
    ///   unknown group, `.notRegistered`, `.network`.
    public func mute(group: String, until: Date? = nil) async throws(MSIKitError) {
        try await registration.mute(group: group, until: until)
    }

    /// Unmutes room or group `group` for the person.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func unmute(group: String) async throws(MSIKitError) {
        try await registration.unmute(group: group)
    }

    // MARK: - Settings

    /// The settings of the device's person, which follow them to every device they bind: quiet hours, language,
    /// digest hour and how they want each subject and group.
    /// - Throws: `.notBound` for a device bound to nobody, `.notRegistered`, `.network`.
    public func settings() async throws(MSIKitError) -> PersonSettings {
        try await registration.personSettings()
    }

    /// How the person wants the messages of `target`: `.instant`, `.digest` or `.off` (the data still arrives in the
    /// background and catch-up has every message; time-sensitive and critical messages always come at once).
    /// - Throws: `.forcedSubscription` for a Forced subject turned off, `.topicNotFound`, `.hub(status: 404,
    ///   code: "group_not_found")`, `.notBound`, `.notRegistered`, `.network`.
    @discardableResult
    public func setDelivery(_ mode: DeliveryMode, for target: DeliveryTarget) async throws(MSIKitError)
        -> PersonSettings
    {
        var change = SettingsChange()
        switch target {
        case .subject(let topicKey): change.subjects[topicKey] = mode
        case .group(let id): change.groups[id] = mode
        }
        return try await registration.changePersonSettings(change)
    }

    /// The person's quiet hours on every device of theirs (nil clears them; each device then keeps its own).
    /// - Throws: `.hub(status: 422, code: "invalid_quiet_hours")`, `.notBound`, `.notRegistered`, `.network`.
    @discardableResult
    public func setQuietHours(_ quietHours: QuietHours?) async throws(MSIKitError) -> PersonSettings {
        var change = SettingsChange()
        change.quietHours = quietHours.map { .set($0) } ?? .clear
        return try await registration.changePersonSettings(change)
    }

    /// The language the hub sends in (a tag such as "de" or "pt-BR"): the person's, on every device of theirs, for a
    /// bound device; this device's own for a device bound to nobody. Call it when the user changes the app's language
    /// (registering sends the locale of the moment only).
    /// - Throws: `.hub(status: 422, ...)` for a tag the hub does not take, `.notRegistered`, `.network`.
    public func setLocale(_ locale: String) async throws(MSIKitError) {
        var change = SettingsChange()
        change.locale = .set(locale)
        do {
            _ = try await registration.changePersonSettings(change)
        } catch let error where error.code == .notBound {
            try await registration.updateLocale(locale)
        }
    }

    // MARK: - Events

    /// The calendar file (RFC 5545, `text/calendar`) of the event a message announces or reminds of
    /// (`Message.event`), for "save to calendar": the series with its exceptions, in the event's zone.
    /// - Throws: `.invalidArgument` for a recurring notice, `.hub(status: 404, ...)` for an event the device's person
    ///   is not in the audience of (or one deleted), `.notRegistered`, `.network`.
    public func calendarFile(for event: EventReference) async throws(MSIKitError) -> Data {
        try await registration.calendarFile(of: event)
    }

    // MARK: - Subscriptions

    /// The device's subscriptions as the hub has them (getSubscribed).
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func subscriptions() async throws(MSIKitError) -> [Subscription] {
        try await registration.subscriptions()
    }

    /// Subscribes the device to a topic (subscribe).
    /// - Throws: `.topicNotFound`, `.notRegistered`, `.network`, the hub's other refusals.
    @discardableResult
    public func subscribe(_ topicKey: String) async throws(MSIKitError) -> Subscription {
        try await registration.subscribe(topicKey)
    }

    /// Unsubscribes the device from a topic (unsubscribe).
    /// - Throws: `.forcedSubscription` for a Forced topic, `.topicNotFound`, `.notRegistered`, `.network`.
    public func unsubscribe(_ topicKey: String) async throws(MSIKitError) {
        try await registration.unsubscribe(topicKey)
    }

    // MARK: - Cube

    /// The information cube (get_iCube): the copy loaded in this process unless `refresh`; else the hub's
    /// (downloaded only if it changed), else, offline, the last copy kept on disk.
    /// - Throws: `.network` or the hub's refusals when there is no copy at all.
    public func cube(refresh: Bool = false) async throws(MSIKitError) -> Cube {
        try await cubeCache.cube(refresh: refresh)
    }

    /// Whether the device is subscribed to the topic (checkIfSubscribed), from the subscriptions last read.
    /// - Throws: `.notRegistered`, `.network`, the hub's refusals.
    public func checkIfSubscribed(_ topicKey: String) async throws(MSIKitError) -> Bool {
        try await registration.subscribedTopics().contains(topicKey)
    }

    /// The names and level of a topic's channel, area and subject and whether the device is subscribed
    /// (getSubscriptionInfo); `SubscriptionInfo`'s placeholders when the cube does not know the topic.
    /// - Throws: as `cube()` and `checkIfSubscribed(_:)`.
    public func subscriptionInfo(_ topicKey: String) async throws(MSIKitError) -> SubscriptionInfo {
        let cube = try await cube()
        return cube.subscriptionInfo(topicKey: topicKey, subscribed: try await registration.subscribedTopics())
    }
}

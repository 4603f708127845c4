import DAO
import HubTime
import Logging
import Mongo

/// Devices and their subscriptions, the design's rules enforced by the hub: a registered device receives every
/// Forced and Recommended subject; it may leave a Recommended one and never a Forced one; cube changes follow
/// (a new Forced or Recommended subject reaches every device, a subject turned Forced reaches everyone, opt-outs
/// included, a deleted subject, area or channel leaves no subscription behind). The database holds the wishes;
/// the `SubscriptionReconciler` applies them at FCM.
public struct DeviceService: Sendable {
    let devices: DeviceDAO
    let subscriptions: SubscriptionDAO
    /// The distinct quiet-hours windows and how many devices have each.
    let quietWindows: QuietWindowDAO
    /// The subjects on their way to every device.
    let rollouts: RolloutDAO
    /// The per-address limit on registrations.
    let throttle: RegistrationThrottle
    /// The archive, read for catch-ups.
    let messages: MessageDAO
    /// The relay workers' progress, which says whether a message they sent themselves is sent.
    let relayProgress: RelayProgressDAO
    /// The groups of a device's person, whose messages its catch-up holds.
    let groups: GroupDAO
    /// The settings that follow a person to every device they bind.
    let personSettings: PersonSettingsDAO
    /// The persons' daily digests, planned when their settings change.
    let digests: DigestScheduleDAO
    /// When a person's digest goes out.
    let digestPolicy: DigestPolicy
    let cube: CubeCache
    /// Wakes this process's reconciler when wishes change.
    public let reconcilerSignal: WakeSignal
    let logger: Logger
    /// The clock (Unix ms) that says which messages a catch-up may show yet.
    let now: UnixClock
    /// Verifies the assertions that bind a device to a person.
    let personAssertions: PersonAssertionVerifier
    /// The assertions that bound a device, so that each binds once.
    let usedAssertions: UsedAssertionDAO
    /// Where a device deleted by a user or token (not by itself) is recorded.
    let audit: AuditLog
    /// The devices that requests authenticate as, read together for the requests that arrive at once.
    let authenticationReads: BatchingGate<ObjectID, Device?>

    /// Every device secret starts with this, so a leaked one is easy to recognise.
    public static let secretPrefix = "msd_"

    init(
        database: MongoDatabase, cube: CubeCache, audit: AuditLog, logger: Logger, now: @escaping UnixClock,
        personAssertions: PersonAssertionVerifier, digestPolicy: DigestPolicy = .standard
    ) {
        self.devices = DeviceDAO(database: database, now: now)
        self.subscriptions = SubscriptionDAO(database: database, now: now)
        self.quietWindows = QuietWindowDAO(database: database)
        self.rollouts = RolloutDAO(database: database, now: now)
        self.throttle = RegistrationThrottle(rates: RateWindowDAO(database: database, now: now), now: now)
        self.messages = MessageDAO(database: database, now: now)
        self.relayProgress = RelayProgressDAO(database: database)
        self.groups = GroupDAO(database: database, now: now)
        self.personSettings = PersonSettingsDAO(database: database, now: now)
        self.digests = DigestScheduleDAO(database: database, now: now)
        self.digestPolicy = digestPolicy
        self.cube = cube
        self.reconcilerSignal = WakeSignal()
        self.logger = logger
        self.now = now
        self.personAssertions = personAssertions
        self.usedAssertions = UsedAssertionDAO(database: database)
        self.audit = audit
        self.authenticationReads = BatchingGate(maximumBatch: 256) { [devices] ids in
            let found = try await devices.devices(ids: ids)
            return ids.map { found[$0] }
        }
    }

    /// A registered device and its secret, shown once.
    public struct Registration: Sendable {
        public var device: Device
        public var secret: String
        /// False when the request proved it is the device of a known registration: the same device, a new secret.
        public var created: Bool
        public var subscriptions: [DeviceSubscription]
    }

    // MARK: Registration

    /// Whether a client at `address` may register another device now, `perMinute` a minute at most (a per-address
    /// throttle shared by every replica; an IPv6 client's /48 also counts, with a higher limit).
    public func mayRegister(from address: ClientAddress, perMinute: Int) async throws -> Bool {
        try await throttle.mayRegister(from: address, perMinute: perMinute)
    }

    /// Registers a device, wanting every Forced and Recommended subject and its language's topic. Knowing a registration token does not give
    /// its device away: a known registration keeps its device only when `presentedSecret` is that device's current
    /// secret (the same id, a new secret, its opt-outs kept but never of a Forced subject). Otherwise the caller gets
    /// a new device and the old one is retired (its id and secret stop working); the registration's subscriptions
    /// pass to the new device, with every Forced and Recommended subject wanted again, and nothing else of the old
    /// device does.
    /// - Throws: `DeviceRefusal` (`.invalidRegistration`; `.registrationTaken` when concurrent registrations of the
    ///   token kept replacing this one); `DAOError`.
    public func register(
        registration: String, platform: Platform, locale: String?, appVersion: String?,
        presenting presentedSecret: String? = nil
    ) async throws -> Registration {
        try Self.check(registration)
        let secret = Self.secretPrefix + Secret.make()
        if let presentedSecret, presentedSecret.hasPrefix(Self.secretPrefix), presentedSecret.utf8.count < 200,
            let device = try await devices.renew(
                registration: registration, provenBy: Secret.hash(presentedSecret),
                secretHash: Secret.hash(secret), platform: platform, locale: locale,
                appVersion: appVersion)
        {
            return try await renewed(device, secret: secret)
        }
        let device: Device, retired: [ObjectID]?
        do {
            (device, retired) = try await devices.register(
                registration: registration, platform: platform, locale: locale,
                appVersion: appVersion, secretHash: Secret.hash(secret))
        } catch let error as DAOError where error.code == .duplicate {
            throw DeviceRefusal(
                .registrationTaken, "this registration is being registered by another request; try again")
        }
        let snapshot = try await cube.snapshot()
        let levels = Self.topicsByLevel(snapshot)
        let wanted = levels.forced + levels.recommended
        guard let retired else {
            try await subscriptions.wantNew(wanted + [Self.languageTopic(of: device)].compactMap { $0 }, for: device)
            reconcilerSignal.notify()
            // A new device wants exactly these and FCM has none yet: two commands in all, no read back. Its language
            // topic is the hub's own, never one of its subjects.
            let answer = wanted.compactMap { topic in
                snapshot.topics[topic].map { DeviceSubscription(topicKey: topic, location: $0, applied: false) }
            }
            return Registration(device: device, secret: secret, created: true, subscriptions: answer)
        }
        // Never the registration: it is a credential of the phone.
        logger.notice(
            "a known registration was registered without its device's secret: that device is retired",
            metadata: [
                "retired": .string(retired.map(\.hex).joined(separator: ",")),
                "device": .string(device.id.hex),
            ])
        // The wishes first, then who holds them: whichever registration of the token wrote last, the wishes end with
        // the device that has it (a later one moves them again; one that lost the race hands them on below).
        try await subscriptions.wake(registration: registration)
        try await subscriptions.set(want: true, topics: wanted, for: device)
        try await followLanguage(device)
        try await subscriptions.reassign(to: device)
        if let holder = try await devices.holder(of: registration), holder.id != device.id {
            try await subscriptions.reassign(to: holder)
        }
        reconcilerSignal.notify()
        return Registration(
            device: device, secret: secret, created: true, subscriptions: try await self.subscriptions(of: device))
    }

    /// The answer to a known device that proved itself: it keeps its opt-outs, but never of a Forced subject.
    private func renewed(_ device: Device, secret: String) async throws -> Registration {
        let levels = try await topicsByLevel()
        try await subscriptions.wantNew(levels.forced + levels.recommended, for: device)
        try await subscriptions.wake(registration: device.registration)
        try await subscriptions.set(want: true, topics: levels.forced, for: device)
        try await followLanguage(device)
        reconcilerSignal.notify()
        return Registration(
            device: device, secret: secret, created: false, subscriptions: try await self.subscriptions(of: device))
    }

    /// The device `id` when `secret` is its secret; the devices of requests that arrive together are read in one
    /// query (`authenticationReads`).
    /// - Throws: `DeviceRefusal.unauthenticated` (an unknown device too: ids are not secrets, but the answer does
    ///   not tell which was wrong); `DAOError`.
    public func authenticate(_ id: ObjectID, secret: String?) async throws -> Device {
        guard let secret, secret.hasPrefix(Self.secretPrefix), secret.utf8.count < 200 else {
            throw DeviceRefusal(
                .unauthenticated, "this route needs the device's secret (Authorization: Bearer msd_...)")
        }
        guard let device = try await authenticationReads.submit(id),
            Secret.constantTimeEquals(device.secretHash, Secret.hash(secret))
        else {
            throw DeviceRefusal(.unauthenticated, "the device secret does not match")
        }
        return device
    }

    /// The device whose secret `secret` is, for a route that names no device (a room's post): found by the
    /// secret's hash, which only that device has.
    /// - Throws: `DeviceRefusal.unauthenticated`; `DAOError`.
    public func authenticate(secret: String?) async throws -> Device {
        guard let secret, secret.hasPrefix(Self.secretPrefix), secret.utf8.count < 200 else {
            throw DeviceRefusal(
                .unauthenticated, "this route needs the device's secret (Authorization: Bearer msd_...)")
        }
        guard let device = try await devices.device(secretHash: Secret.hash(secret)) else {
            throw DeviceRefusal(.unauthenticated, "no device has this secret")
        }
        return device
    }

    /// The device `id`, for an admin's request (no secret is checked: the caller's role is).
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func device(_ id: ObjectID) async throws -> Device {
        try await devices.get(id)
    }

    /// Changes a device's registration (FCM rotated the token: every wish moves to the new one), locale (its
    /// language topic follows) or app version.
    /// - Throws: `DeviceRefusal` (`.invalidRegistration`, `.registrationTaken`); `DAOError`.
    public func update(_ device: Device, registration: String?, locale: String?, appVersion: String?) async throws
        -> Device
    {
        if let registration { try Self.check(registration) }
        let updated: Device
        do {
            updated = try await devices.update(
                device.id, registration: registration, locale: locale, appVersion: appVersion)
        } catch let error as DAOError where error.code == .duplicate {
            throw DeviceRefusal(.registrationTaken, "another device has this registration; register it instead")
        }
        if updated.registration != device.registration {
            try await subscriptions.move(from: device.registration, to: updated)
            reconcilerSignal.notify()
        }
        if locale != nil {
            try await followLanguage(updated)
            reconcilerSignal.notify()
        }
        return updated
    }

    /// Removes a device and, through the reconciler, all its subscriptions at FCM: its wishes before the device
    /// (a stop in between leaves nothing behind), and again after, for what a rollout recorded meanwhile (it checks
    /// the device once it has recorded: either it finds the device gone, or this finds its record).
    public func delete(_ device: Device) async throws {
        try await subscriptions.removeRegistration(device.registration)
        try await devices.delete(device.id)
        try await subscriptions.removeRegistration(device.registration)
        if let topic = device.quietTopic { try await quietWindows.remove(topic: topic) }
        reconcilerSignal.notify()
        if AuditActor.current.kind == .user || AuditActor.current.kind == .token {
            await audit.record(
                action: "device.delete", target: AuditTarget(kind: "device", id: device.id.hex),
                change: AuditChange.deleted(["platform": .string(device.platform.rawValue)]))
        }
    }

    /// A device as its own routes show it (never its registration).
    public func view(_ device: Device) -> BSONDocument {
        var document: BSONDocument = [
            "device_id": .string(device.id.hex), "platform": .string(device.platform.rawValue),
            "state": .string(device.state.rawValue),
        ]
        if let locale = device.locale { document["locale"] = .string(locale) }
        if let appVersion = device.appVersion { document["app_version"] = .string(appVersion) }
        if let person = device.person { document["person"] = .string(person) }
        if let quiet = device.quietHours {
            document["quiet_hours"] = [
                "from": .string(quiet.fromText), "to": .string(quiet.toText),
                "tz": .string(quiet.timeZoneID),
            ]
        }
        return document
    }

    // MARK: Subscriptions

    /// The subjects the device receives (subjects no longer in the cube are left out), those a rollout has yet
    /// to bring to it included, as pending.
    public func subscriptions(of device: Device) async throws -> [DeviceSubscription] {
        let snapshot = try await cube.snapshot()
        return try await wishes(of: device).compactMap { topic, applied in
            snapshot.topics[topic].map { DeviceSubscription(topicKey: topic, location: $0, applied: applied) }
        }
    }

    /// The device's topic keys (what it receives, or soon will), for the catch-up route.
    public func topicKeys(of device: Device) async throws -> [String] {
        try await wishes(of: device).map(\.topic)
    }

    /// What the device wants, by topic key in order, with whether FCM has it: its wishes, and the topics being
    /// rolled out for which it has none (not reached yet; an opt-out is a wish). Subjects only: the topics the hub
    /// owns itself (`ServerOwnedTopic`: its language, its quiet hours) are no subscription of the device's.
    private func wishes(of device: Device) async throws -> [(topic: String, applied: Bool)] {
        let recorded = try await subscriptions.all(of: device).filter { !ServerOwnedTopic.contains($0.topic) }
        let known = Set(recorded.map(\.topic))
        let unreached =
            device.state == .active
            ? try await rollouts.topicsUnderWay().map(\.topic).filter { !known.contains($0) } : []
        let wanted: [(topic: String, applied: Bool)] =
            recorded.filter(\.want).map { ($0.topic, $0.applied) }
            + unreached.map { ($0, false) }
        return wanted.sorted { $0.topic < $1.topic }
    }

    /// What `device` missed: a page of the messages of its subscriptions at or after `since` (Unix ms), oldest
    /// first, without those whose `ttl` has run out or whose `send_at` has not come; `after` continues a previous
    /// page. A device bound to a person also gets the messages sent to that person (whichever of their devices
    /// it is, so a new phone sees their recent messages) and to the groups the person is a member of now. Two
    /// queries however many subscriptions: the device's topics, then one page of the archive (and the person's
    /// groups for a bound device); and one for the progress records of the messages on it that their hub sent
    /// itself, if any. Each message as a device sees it (`MessageVisibility`: its public fields).
    /// - Throws: `DAOError`.
    public func catchUp(_ device: Device, since: Int64, limit: Int, after: MessageCursor?) async throws -> MessagePage {
        let topics = try await topicKeys(of: device)
        var personGroups: [String] = []
        if let person = device.person { personGroups = try await groups.groups(of: person) }
        let now = self.now()
        var page = try await messages.catchUp(
            CatchUpQuery(
                topicKeys: topics, person: device.person, groups: personGroups,
                since: since, limit: limit, after: after, now: now))
        page.messages = try await relayProgress.resolved(page.messages).compactMap {
            MessageVisibility.deviceView($0, person: device.person, groups: personGroups, now: now)
        }
        return page
    }

    /// Subscribes the device to a subject.
    /// - Throws: `DeviceRefusal.topicNotFound`; `DAOError`.
    public func subscribe(_ device: Device, to topicKey: String) async throws -> DeviceSubscription {
        let location = try await subject(topicKey)
        try await subscriptions.set(want: true, topics: [topicKey], for: device)
        reconcilerSignal.notify()
        let applied = try await subscriptions.wanted(by: device).first { $0.topic == topicKey }?.applied ?? false
        return DeviceSubscription(topicKey: topicKey, location: location, applied: applied)
    }

    /// Unsubscribes the device from a subject; a Forced one cannot be left.
    /// - Throws: `DeviceRefusal` (`.topicNotFound`, `.forcedSubscription`); `DAOError`.
    public func unsubscribe(_ device: Device, from topicKey: String) async throws {
        let location = try await subject(topicKey)
        guard location.subject.level != SubscriptionLevel.forced.rawValue else {
            throw DeviceRefusal(.forcedSubscription, "\(location.subject.name) is Forced: every device receives it")
        }
        try await subscriptions.set(want: false, topics: [topicKey], for: device)
        reconcilerSignal.notify()
    }

    /// The devices that will receive a message to `topicKey`.
    /// - Throws: `DeviceRefusal.topicNotFound`; `DAOError`.
    public func audience(of topicKey: String) async throws -> Audience {
        _ = try await subject(topicKey)
        let wishes = try await subscriptions.wishes(for: topicKey)
        // While the topic is rolled out, the active devices with no wish for it yet are on their way.
        let rolling = try await rollouts.topicsUnderWay().contains { $0.topic == topicKey }
        let active = rolling ? try await devices.countByPlatform() : [:]
        var byPlatform: [Platform: (applied: Int, pending: Int)] = [:]
        for platform in Platform.allCases {
            let counts = wishes[platform] ?? SubscriptionDAO.TopicWishes()
            let unreached = max(0, (active[platform] ?? 0) - counts.recorded)
            byPlatform[platform] = (counts.applied, counts.pending + unreached)
        }
        var audience = Audience(topicKey: topicKey, byPlatform: byPlatform)
        audience.held = try await subscriptions.wishes(for: ServerOwnedTopic.held(topicKey)).values
            .reduce(0) { $0 + $1.applied + $1.pending }
        return audience
    }

    /// Active devices by platform and the reconciler's backlog (pending subscriptions and the due time of the
    /// oldest, in Unix ms; subjects being rolled out), for metrics (`DatabaseGauges`). Every count runs on an index
    /// (`state.platform`, `pending.due_at`); the rollouts are one small document per subject under way.
    public func statistics() async throws
        -> (byPlatform: [Platform: Int], pending: Int, oldestPendingDueAt: Int64?, rollouts: Int)
    {
        let backlog = try await subscriptions.backlog()
        return (
            try await devices.countByPlatform(), backlog.count, backlog.oldestDueAt,
            try await rollouts.topicsUnderWay().count
        )
    }

    /// For every subject's topic, how many devices a message to it reaches (the portal's send form and subject
    /// pages); the hub's own topics (languages, quiet hours) are no subject's.
    public func audienceSizes() async throws -> [String: Int] {
        var sizes = try await subscriptions.audienceSizes().filter { !ServerOwnedTopic.contains($0.key) }
        let underWay = try await rollouts.topicsUnderWay()
        guard !underWay.isEmpty else { return sizes }
        let active = try await devices.countByPlatform().values.reduce(0, +)
        for rollout in underWay {
            let wishing = try await subscriptions.wishes(for: rollout.topic).values.reduce(0) { $0 + $1.recorded }
            sizes[rollout.topic, default: 0] += max(0, active - wishing)
        }
        return sizes
    }

    // MARK: Following the cube

    /// A subject was added: a Forced or Recommended one reaches every registered device.
    func subjectAdded(_ subject: Subject) async throws {
        guard
            subject.level == SubscriptionLevel.forced.rawValue
                || subject.level == SubscriptionLevel.recommended.rawValue
        else { return }
        try await fanOut(subject.topicKey)
    }

    /// A subject changed: turned Forced, it reaches everyone (opt-outs included); turned Recommended from
    /// optional, every device that never chose.
    func subjectChanged(from before: Subject?, to after: Subject) async throws {
        let forced = SubscriptionLevel.forced.rawValue, recommended = SubscriptionLevel.recommended.rawValue
        if after.level == forced, before?.level != forced {
            try await subscriptions.wantEverywhere(after.topicKey)
            try await fanOut(after.topicKey)
        } else if after.level == recommended, before?.level != recommended, before?.level != forced {
            try await fanOut(after.topicKey)
        }
    }

    /// Subjects went away (a subject: its topic key; an area or channel: the prefix of their topic keys): no
    /// subscription to them remains, here or, through the reconciler, at FCM.
    func topicsRemoved(prefix: String, exact: Bool) async throws {
        // The rollouts first: a page in flight either sees the cancellation once it has recorded, or has
        // recorded before the wishes are unwanted here.
        try await rollouts.cancel(prefix: prefix, exact: exact)
        try await subscriptions.removeTopics(prefix: prefix, exact: exact)
        reconcilerSignal.notify()
    }

    /// Rolls `topic` out to every active device that has no wish for it (`SubscriptionReconciler.rollOutOnce`):
    /// one write here, however many devices are registered.
    private func fanOut(_ topic: String) async throws {
        try await rollouts.start(topic)
        reconcilerSignal.notify()
    }

    // MARK: Helpers

    /// The Forced and Recommended topics of the cube in memory.
    public func topicsByLevel() async throws -> (forced: [String], recommended: [String]) {
        Self.topicsByLevel(try await cube.snapshot())
    }

    private static func topicsByLevel(_ snapshot: CubeSnapshot) -> (forced: [String], recommended: [String]) {
        var forced: [String] = [], recommended: [String] = []
        for (topic, location) in snapshot.topics {
            switch location.subject.level {
            case SubscriptionLevel.forced.rawValue: forced.append(topic)
            case SubscriptionLevel.recommended.rawValue: recommended.append(topic)
            default: break
            }
        }
        return (forced.sorted(), recommended.sorted())
    }

    func subject(_ topicKey: String) async throws -> SubjectLocation {
        do {
            return try await cube.location(topicKey: topicKey)
        } catch let error as DAOError where error.code == .topicNotFound {
            throw DeviceRefusal(.topicNotFound, error.message)
        }
    }

    /// FCM registration tokens and installation ids: printable ASCII without spaces, at most 4 KiB.
    static func check(_ registration: String) throws {
        guard (1...4096).contains(registration.utf8.count),
            registration.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "/") })
        else {
            throw DeviceRefusal(
                .invalidRegistration, "registration must be an FCM registration token (printable, no spaces)")
        }
    }

}

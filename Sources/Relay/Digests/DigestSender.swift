import DAO
import FCM
import Foundation
import HubModel
import HubTime
import Logging
import Mongo

/// What the digest sender reads and writes: the persons' digests and settings, the archive the held messages are read
/// from, the devices sent to, the names a digest says, the lease of the one sender at a time, and the clock digests
/// fall due by.
public struct DigestStores: Sendable {
    public let schedule: DigestScheduleDAO
    /// Holds `DigestScheduleDAO.senderLease`.
    public let leases: LeaseDAO
    public let settings: PersonSettingsDAO
    public let messages: MessageDAO
    public let devices: DeviceDAO
    public let groups: GroupDAO
    public let subjects: SubjectDAO
    /// When a person's next digest goes out.
    public let policy: DigestPolicy
    /// The clock (Unix ms) digests fall due by, and a digest's window ends at: the hub's, or one a test moves.
    public let now: UnixClock

    public init(database: MongoDatabase, policy: DigestPolicy, now: @escaping UnixClock) {
        self.schedule = DigestScheduleDAO(database: database, now: now)
        self.leases = LeaseDAO(database: database, now: now)
        self.settings = PersonSettingsDAO(database: database, now: now)
        self.messages = MessageDAO(database: database, now: now)
        self.devices = DeviceDAO(database: database, now: now)
        self.groups = GroupDAO(database: database, now: now)
        self.subjects = SubjectDAO(database: database)
        self.policy = policy
        self.now = now
    }
}

/// Sends each person who chose `digest` for a subject or group one push a day at their digest time, for the hub's
/// life, beside the outbox worker whose per-device lane (gate, pacer, send rate) it shares.
///
/// Any number of replicas run one each, and one at a time sends, while it holds the digests' lease
/// (`DigestScheduleDAO.senderLease`, through `Leadership`): a digest goes once, and one a replica sent but
/// did not record before it died goes again when the lease has run out (at most `recordEvery` and those in flight).
/// A digest holds the messages of the person's digest subjects and
/// groups stored since the last one (`MessageDAO.digestCandidates`: sent, not withdrawn), less those that went
/// through at once (`PreferencePolicy`: time-sensitive, critical, `override_preferences`), those the person was left
/// out of and their own posts; each message once. Nothing is stored per held message: the fan-out sent them to the
/// person's devices in the background, and the digest reads them back from the archive. An empty digest is not sent;
/// either way the next is planned for the next day's digest time.
public struct DigestSender: Sendable {
    /// How the sender claims.
    public struct Configuration: Sendable {
        /// How long a claim holds a digest.
        public var lease: Duration = .seconds(60)
        /// How often due digests are looked for.
        public var poll: Duration = .seconds(5)
        /// Digests a round reads at most: every digest due, read once (the embedded database reads every document a
        /// range matches whatever the limit, so a read of a page at a time would cost it the whole hour's digests at
        /// each page).
        public var batch = 50_000
        /// Digests prepared and sent as one page: their settings, held messages and devices read together.
        public var page = 250
        /// Digests sent at once (each to its person's devices in turn).
        public var inFlight = 100

        public init() {}
    }

    let stores: DigestStores
    let lane: DeviceLane
    let configuration: Configuration
    let logger: Logger
    /// Whether this replica is the one that sends (it holds `DigestScheduleDAO.senderLease`).
    let leadership: Leadership
    /// This replica's name in the digests' lease.
    var owner: String { leadership.owner }

    /// How long a digest whose devices FCM asked to wait for waits when FCM named no time.
    static let retryDelayMS: Int64 = 60_000

    /// The sender for `stores`, sending through `lane` (the outbox worker's); nil without one.
    public init?(
        stores: DigestStores, lane: DeviceLane?, configuration: Configuration = Configuration(), logger: Logger
    ) {
        guard let lane else { return nil }
        self.stores = stores
        self.lane = lane
        self.configuration = configuration
        self.logger = logger
        self.leadership = Leadership(
            key: DigestScheduleDAO.senderLease,
            owner: "digest-\(ProcessInfo.processInfo.hostName)-\(getpid())-\(ObjectID().hex.suffix(8))",
            leases: stores.leases, lease: configuration.lease, now: stores.now)
    }

    /// Claims and sends due digests until the task is cancelled, then gives the digests' lease up (if it holds it),
    /// so that another replica sends the next round at once rather than when the lease runs out.
    public func run() async {
        await PollingLoop.run(
            logger: logger, failure: "digests could not be read or recorded",
            idle: { try? await Task.sleep(for: configuration.poll) }
        ) {
            try await sendDue(limit: configuration.batch) == configuration.batch
        }
        // Not cancelled with this task: the release must land.
        await Task { [leadership, logger] in await leadership.resign(logger: logger) }.value
    }

    /// What one round of `sendDue` did.
    public struct Round: Sendable, Equatable {
        /// Digests claimed.
        public var claimed = 0
        /// Digests sent (to at least one device).
        public var sent = 0
        /// Devices sent to.
        public var devices = 0
        /// Messages the digests sent held, together.
        public var messages = 0

        /// Adds what a page of the round sent (its `claimed` counted by the round).
        mutating func add(_ page: Round) {
            sent += page.sent
            devices += page.devices
            messages += page.messages
        }
    }

    /// Sends up to `limit` digests due now while this sender holds the lease; returns how many it read.
    /// - Throws: `DAOError` when the database fails (a digest not recorded is due again when its lease runs out).
    @discardableResult
    public func sendDue(limit: Int = 100) async throws -> Int {
        try await sendRound(limit: limit).claimed
    }

    /// `sendDue`, with what the round did. A round reads the digests due in one read and sends them a page at a time,
    /// the next page's reads made while the one before is sent; the lease is renewed before each page.
    public func sendRound(limit: Int = 100) async throws -> Round {
        // Another replica sends the digests while it leads.
        guard try await leadership.lead() else { return Round() }
        let due = try await stores.schedule.due(now: stores.now(), limit: limit)
        var round = Round(claimed: due.count)
        guard !due.isEmpty else { return round }
        // One end for every window of the round: a subject's or group's read serves every digest that holds it, and
        // the next windows start where these end.
        let through = stores.now()
        var reads = DigestReads(stores: stores, from: due.map(\.since).min() ?? through)
        let pageSize = max(configuration.page, 1)
        try await withThrowingTaskGroup(of: Round.self) { group in
            var sending = false
            for start in stride(from: 0, to: due.count, by: pageSize) {
                if Task.isCancelled { break }
                // A lease lost (another replica leads now) ends the round: what is not sent is due still.
                guard try await leadership.lead(), let until = leadership.until else { break }
                let page = try await prepare(
                    Array(due[start..<min(start + pageSize, due.count)]), through: through,
                    reads: &reads)
                // One page sent while the next is read.
                if sending, let sent = try await group.next() { round.add(sent) }
                // No send starts in the lease's last quarter: what is not sent by then waits for the next round.
                let lease = Lease(until: until - configuration.lease.milliseconds / 4, now: stores.now)
                group.addTask { try await send(page, through: through, lease: lease) }
                sending = true
            }
            while let sent = try await group.next() { round.add(sent) }
        }
        await lane.drain()
        return round
    }

    /// A page of a round's digests, read: those to send with their persons' devices, and those done already (nothing
    /// in their window: recorded with the page's sends).
    struct PreparedPage: Sendable {
        var ready: [(digest: ReadyDigest, devices: [Device])] = []
        var completed: [DigestScheduleDAO.Completion] = []
    }

    /// Reads what each of `due` holds: the persons' settings in two reads, their messages from the round's `reads`,
    /// and the devices of those with something to send in one read.
    private func prepare(_ due: [DueDigest], through: Int64, reads: inout DigestReads) async throws -> PreparedPage {
        let settings = try await stores.settings.settings(of: due.map(\.person))
        var page = PreparedPage()
        var ready: [ReadyDigest] = []
        for digest in due {
            let mine = settings[digest.person] ?? PersonSettings(person: digest.person)
            switch try await prepare(digest, settings: mine, through: through, reads: &reads) {
            case .send(let prepared): ready.append(prepared)
            case .empty(let next): page.completed.append(.init(digest: digest, next: next, sent: nil))
            case .ended: break
            }
        }
        let devices = Dictionary(
            grouping: try await stores.devices.active(ofPersons: ready.map(\.digest.person)),
            by: { $0.person ?? "" })
        page.ready = ready.map { ($0, devices[$0.digest.person] ?? []) }
        return page
    }

    /// Sends a prepared page, `inFlight` digests at once through the lane (its pacer sets the rate), recording them a
    /// few dozen at a time (`DigestScheduleDAO.done(_:through:)`) as their devices answer.
    private func send(_ page: PreparedPage, through: Int64, lease: Lease) async throws -> Round {
        var round = Round()
        var completed = page.completed
        try await withThrowingTaskGroup(of: (reached: Int, completion: DigestScheduleDAO.Completion?).self) {
            group in
            var running = 0
            func take(_ answer: (reached: Int, completion: DigestScheduleDAO.Completion?)) async throws {
                if let completion = answer.completion {
                    completed.append(completion)
                    if answer.reached > 0 {
                        round.sent += 1
                        round.devices += answer.reached
                        round.messages += completion.sent?.count ?? 0
                    }
                }
                if completed.count >= Self.recordEvery {
                    try await stores.schedule.done(completed, through: through)
                    completed.removeAll()
                }
            }
            for (digest, devices) in page.ready {
                if running >= configuration.inFlight, let answer = try await group.next() {
                    try await take(answer)
                    running -= 1
                }
                group.addTask { try await deliver(digest, to: devices, lease: lease) }
                running += 1
            }
            while let answer = try await group.next() { try await take(answer) }
        }
        try await stores.schedule.done(completed, through: through)
        return round
    }

    /// How many digests done are recorded together: a crash between a send and its record sends it again when the
    /// lease runs out, so the batch stays small.
    static let recordEvery = 50

    /// Until when this round's sends may start (the lease's end less a margin).
    struct Lease: Sendable {
        let until: Int64
        let now: UnixClock

        var holds: Bool { now() < until }
    }

    /// A digest with something to send: its push and when the next is due.
    struct ReadyDigest: Sendable {
        let digest: DueDigest
        let push: FCMDigest
        let through: Int64
        let next: Int64
    }

    /// What a due digest comes to.
    enum Prepared {
        /// Something to send.
        case send(ReadyDigest)
        /// Nothing in its window: not sent, the next due at this time.
        case empty(next: Int64)
        /// Nothing of the person's is in digest mode any more: the schedule ended (recorded).
        case ended
    }

    /// Reads what `digest` (its window ending at `through`, its person's `settings`) holds.
    private func prepare(
        _ digest: DueDigest, settings: PersonSettings, through: Int64, reads: inout DigestReads
    ) async throws -> Prepared {
        guard stores.policy.wantsDigest(settings) else {
            try await stores.schedule.cancel(digest.person)
            return .ended
        }
        let next = stores.policy.nextDue(after: through, for: settings)
        let entries = try await reads.entries(for: settings, after: digest.since, through: through)
        guard !entries.isEmpty else { return .empty(next: next) }
        return .send(
            ReadyDigest(
                digest: digest, push: FCMDigest(id: ObjectID().hex, entries: entries, timestamp: through),
                through: through, next: next))
    }

    /// Sends a ready digest to its person's active `devices` one after another; returns how many took it and, when
    /// it is done, what to record (nil: put off to be retried, or the lease ran out before it began: due still).
    private func deliver(_ ready: ReadyDigest, to devices: [Device], lease: Lease) async throws
        -> (reached: Int, completion: DigestScheduleDAO.Completion?)
    {
        guard lease.holds else { return (0, nil) }
        var reached = 0
        for device in devices {
            switch await lane.send(ready.push, to: device.registration, locale: device.locale) {
            case .sent: reached += 1
            case .cancelled:
                return (reached, nil)  // due still: the lease's next holder sends it
            case .retryLater(let error), .paused(let error):
                // Sent to none yet: the whole digest waits; else what reached a device stands.
                if reached == 0 {
                    let wait = error.retryAfter?.milliseconds ?? Self.retryDelayMS
                    try await stores.schedule.retry(ready.digest, at: stores.now() + wait)
                    return (0, nil)
                }
            case .unregistered, .failed:
                continue
            }
        }
        let sent =
            reached > 0
            ? SentDigest(at: ready.through, count: ready.push.entries.count, summary: ready.push.summary) : nil
        return (reached, .init(digest: ready.digest, next: ready.next, sent: sent))
    }
}

/// The reads of one round of digests: each subject's and group's messages, from the earliest window's start of the
/// round, and names read once for every digest that holds it; each digest takes those of its own window.
struct DigestReads {
    let stores: DigestStores
    /// The earliest start of the round's windows (Unix ms, exclusive).
    let from: Int64
    private var candidates: [String: [Message]] = [:]
    private var names: [String: String] = [:]

    init(stores: DigestStores, from: Int64) {
        self.stores = stores
        self.from = from
    }

    /// The entries of a digest of `settings`' person for the window (`after`, `through`], oldest first, each
    /// message once.
    mutating func entries(for settings: PersonSettings, after: Int64, through: Int64) async throws
        -> [FCMDigest.Entry]
    {
        var seen: Set<ObjectID> = []
        var found: [(Message, String)] = []
        for scope in DeliveryScope.allCases {
            for (id, mode) in (settings.delivery[scope] ?? [:]).sorted(by: { $0.key < $1.key }) where mode == .digest {
                let from = try await name(of: scope, id)
                for message in try await messages(of: scope, id, after: after, through: through)
                where DigestReads.holds(message, for: settings.person) && seen.insert(message.msiKey).inserted {
                    found.append((message, from))
                }
            }
        }
        return found.sorted { ($0.0.timestamp, $0.0.msiKey.hex) < ($1.0.timestamp, $1.0.msiKey.hex) }.map {
            FCMDigest.Entry(msiKey: $0.0.msiKey.hex, title: $0.0.title, from: $0.1, timestamp: $0.0.timestamp)
        }
    }

    /// Whether a message of a digest subject or group was held for `person`: it did not go through at once
    /// (`PreferencePolicy`), the person was not left out of it, and it is not their own post.
    static func holds(_ message: Message, for person: String) -> Bool {
        !message.breaksThroughPreferences && message.senderPerson != person
            && !(message.recipients?.exceptPersons.contains(person) ?? false)
    }

    private mutating func messages(of scope: DeliveryScope, _ id: String, after: Int64, through: Int64)
        async throws -> [Message]
    {
        let key = "\(scope.rawValue)\u{1F}\(id)"
        let read: [Message]
        if let known = candidates[key] {
            read = known
        } else {
            read = try await stores.messages.digestCandidates(of: scope, id, after: min(from, after), through: through)
            candidates[key] = read
        }
        return read.filter { $0.timestamp > after }
    }

    /// A subject's or group's name as a digest says it; its id when it is gone.
    private mutating func name(of scope: DeliveryScope, _ id: String) async throws -> String {
        let key = "\(scope.rawValue)\u{1F}\(id)"
        if let known = names[key] { return known }
        let name: String
        switch scope {
        case .subject:
            do {
                name = try await stores.subjects.find(topicKey: id).subject.name
            } catch let error as DAOError where error.code == .topicNotFound {
                name = id
            }
        case .group:
            name = try await stores.groups.group(id: id)?.name ?? id
        }
        names[key] = name
        return name
    }
}

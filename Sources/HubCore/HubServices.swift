import DAO
import HubModel
import HubTime
import Logging
import Mongo
import OIDC

/// The hub's services over one database: what every entry point (REST routes, portal, command line) calls.
/// Each policy a user can observe lives in one of them.
public struct HubServices: Sendable {
    /// The database pool (health checks and metrics read it).
    public let pool: MongoClientPool
    public let database: MongoDatabase
    /// The information cube: writes with their refresh, reads from memory.
    public let cube: CubeService
    /// Sending and reading messages.
    public let messages: MessageService
    /// Users, API tokens and portal sessions.
    public let accounts: AccountService
    /// Devices and their subscriptions.
    public let devices: DeviceService
    /// Groups of persons and who may send to them.
    public let groups: GroupService
    /// Rooms: groups whose members post from their devices, and their managers.
    public let rooms: RoomService
    /// Whether each person's unread messages are counted (`UNREAD_COUNTS`): the relay counts them as it sends.
    public let countsUnread: Bool
    /// The per-device deliveries of messages to persons and groups, for their senders and admins.
    public let deliveries: DeliveryReportService
    /// Webhooks for the school's gateways and their deliveries.
    public let webhooks: WebhookService
    /// Who subscribes to which webhook event, as this hub last read it: the one memory its webhook routes, its event
    /// emitters and its webhook worker share (a change made here is seen by this hub's next event at once).
    public let webhookSubscribers: WebhookSubscribers
    /// Receipts from the app and the reach report of messages.
    public let receipts: ReceiptService
    /// The hash-chained audit log every service records its changes in.
    public let audit: AuditLog
    /// Two-person approval of the messages `ApprovalPolicy` holds.
    public let approvals: ApprovalService
    /// Events and their reminders.
    public let events: EventService
    /// Gives the messages this process stores to its relay worker in memory, leased in the insert: the one thing
    /// the services and the relay share (the relay reads and writes its own collections through its own DAOs).
    public let outboxHandoff: OutboxHandoff
    /// How far behind the relay is, and the bound past which new messages are refused (`/readyz` reports it).
    public let relayBacklog: RelayBacklog
    /// The message outbox, for the metrics' backlog.
    let outbox: OutboxDAO
    /// How far each relay worker got with the messages it stored and sends itself (whether a message is sent).
    let relayProgress: RelayProgressDAO
    /// The clock every service reads (Unix ms): the wall clock, or the one a test moves.
    public let now: UnixClock
    /// When persons' daily digests go out (`DIGEST_HOUR`, `SCHOOL_TIME_ZONE`): the relay's digest sender reads it.
    public let digestPolicy: DigestPolicy
    /// Staff sign-in through the school's OpenID provider; nil when none is configured (`OIDC_ISSUER` unset).
    public let staffSignIn: StaffSignIn?
    /// A person's data on request: export and erasure.
    public let personData: PersonDataService
    /// The purge of what is past its retention limit (`RETENTION_*_DAYS`).
    public let retention: RetentionSweep

    /// The services over `database` (the pool's default database unless tests pick another).
    /// - Parameters:
    ///   - relayDeadline: how long the relay retries a message before marking it failed.
    ///   - relayMaxBacklog: past this age of the oldest unsent message, new messages are refused (nil: never).
    ///   - bcryptCost: bcrypt's work factor for new password hashes.
    ///   - writeDeadline: how long a message's insert may go unacknowledged before its outcome is settled.
    ///   - now: the clock the services read (Unix ms).
    ///   - cubeDidLoad: called with each new version of the cube (the HTTP layer prepares its answers).
    ///   - personAssertions: verifies the assertions that bind devices to persons (none configured: binding refused).
    ///   - webhookPolicy: where webhook deliveries may go (`WEBHOOK_ALLOWED_NETWORKS`).
    ///   - defaultLanguage: the language of a translated message's own texts when it names none (`DEFAULT_LANGUAGE`).
    ///   - approval: which sends wait for a second person (`APPROVAL_GROUP_SIZE`, `APPROVAL_TIMEOUT`).
    ///   - roomPostsPerMinute: posts one person may make to rooms a minute (`ROOM_POSTS_PER_MINUTE`).
    ///   - countsUnread: whether each person's unread messages are counted (`UNREAD_COUNTS`).
    ///   - digests: when persons' daily digests go out (`DIGEST_HOUR`, `SCHOOL_TIME_ZONE`).
    ///   - staffProvider: the OpenID provider staff sign in with and who may enter (`OIDC_*`); nil: none.
    ///   - passwordLogins: whether users may log in with a password (false with `OIDC_ONLY=true`).
    ///   - pseudonymKey: the key of persons' pseudonyms (`AUDIT_PSEUDONYM_KEY`); nil: one the hub makes and keeps.
    ///   - erasureBlockDays: how long an erased person is kept out of rosters (`ERASURE_BLOCK_DAYS`; 0: not at all).
    ///   - retention: how long deliveries, receipts, messages and room posts are kept (`RETENTION_*_DAYS`).
    public init(
        pool: MongoClientPool, database: MongoDatabase? = nil, relayDeadline: Duration = .seconds(6 * 3600),
        relayMaxBacklog: Duration? = .seconds(30),
        writeDeadline: Duration = .seconds(5), bcryptCost: UInt8 = 11, logger: Logger = Logger(label: "msi-hub"),
        now: @escaping UnixClock = UnixTime.nowMilliseconds,
        cubeDidLoad: @escaping @Sendable (CubeSnapshot) -> Void = { _ in },
        personAssertions: PersonAssertionVerifier = PersonAssertionVerifier(settings: PersonAssertionSettings()),
        webhookPolicy: WebhookAddressPolicy = WebhookAddressPolicy(),
        defaultLanguage: String = LocaleLanguage.defaultLanguage,
        approval: ApprovalPolicy = ApprovalPolicy(),
        roomPostsPerMinute: Int = 30, countsUnread: Bool = false, digests: DigestPolicy = .standard,
        staffProvider: (provider: OIDCProvider, rules: StaffDirectoryRules)? = nil, passwordLogins: Bool = true,
        pseudonymKey: String? = nil, erasureBlockDays: Int = 0, retention: RetentionLimits = RetentionLimits()
    ) {
        self.countsUnread = countsUnread
        self.digestPolicy = digests
        let database = database ?? pool.database()
        self.pool = pool
        self.database = database
        self.now = now
        self.audit = AuditLog(database: database, logger: logger, now: now, pseudonymKey: pseudonymKey)
        let cache = CubeCache(
            channels: ChannelDAO(database: database), subjects: SubjectDAO(database: database),
            didLoad: cubeDidLoad)
        self.devices = DeviceService(
            database: database, cube: cache, audit: audit, logger: logger, now: now,
            personAssertions: personAssertions, digestPolicy: digests)
        self.cube = CubeService(database: database, cache: cache, devices: devices, audit: audit, logger: logger)
        self.accounts = AccountService(
            database: database, audit: audit, bcryptCost: bcryptCost, passwordLogins: passwordLogins, now: now)
        if let staffProvider {
            self.staffSignIn = StaffSignIn(
                database: database, provider: staffProvider.provider, rules: staffProvider.rules,
                accounts: self.accounts, cube: self.cube, logger: logger, now: now)
        } else {
            self.staffSignIn = nil
        }
        let personData = PersonDataService(
            database: database, devices: devices, audit: audit,
            blockDays: erasureBlockDays, logger: logger, now: now)
        self.personData = personData
        self.retention = RetentionSweep(database: database, limits: retention, logger: logger, now: now)
        self.groups = GroupService(database: database, now: now, audit: audit, erased: personData.blocked)
        self.deliveries = DeliveryReportService(database: database)
        self.webhookSubscribers = WebhookSubscribers()
        self.webhooks = WebhookService(
            database: database, subscribers: webhookSubscribers, policy: webhookPolicy,
            now: now, audit: audit)
        self.receipts = ReceiptService(
            database: database, cube: cache, webhookSubscribers: webhookSubscribers,
            countsUnread: countsUnread, logger: logger, now: now)
        self.outbox = OutboxDAO(database: database)
        self.outboxHandoff = OutboxHandoff()
        let approvalRules = ApprovalRules(database: database, seed: approval)
        self.relayProgress = RelayProgressDAO(database: database)
        self.relayBacklog = RelayBacklog(outbox: outbox, progress: relayProgress, maximum: relayMaxBacklog, now: now)
        self.messages = MessageService(
            messages: MessageDAO(database: database, writeDeadline: writeDeadline, now: now),
            idempotencyKeys: IdempotencyKeyDAO(database: database), cube: cube.cache,
            groups: GroupDAO(database: database, now: now),
            relay: outboxHandoff, progress: relayProgress, backlog: relayBacklog,
            relayDeadline: relayDeadline,
            now: now, defaultLanguage: defaultLanguage, approvalRules: approvalRules,
            approvals: ApprovalDAO(database: database),
            audit: audit)
        self.rooms = RoomService(
            database: database, groups: groups, messages: messages, postsPerMinute: roomPostsPerMinute, now: now)
        self.approvals = ApprovalService(
            database: database, messages: messages, cube: cube.cache, relay: outboxHandoff, rules: approvalRules,
            relayDeadline: relayDeadline, audit: audit, logger: logger, now: now)
        self.events = EventService(
            events: EventDAO(database: database, now: now), messages: messages,
            groups: GroupDAO(database: database, now: now), now: now, audit: audit, logger: logger)
    }

    /// The follower that keeps the in-memory copies (cube, tokens) current with the database.
    public func follower(logger: Logger) -> DatabaseFollower {
        DatabaseFollower(
            database: database,
            copies: [
                FollowedCopy(
                    collection: CollectionName.icube, reload: cube.cache.refresh, freshness: cube.cache.freshness),
                FollowedCopy(
                    collection: CollectionName.tokens, reload: accounts.tokenDirectory.refresh,
                    freshness: accounts.tokenDirectory.freshness),
                FollowedCopy(
                    collection: CollectionName.settings, reload: approvals.rules.refresh,
                    freshness: approvals.rules.freshness),
            ], logger: logger)
    }

    /// Loads the in-memory copies before the first request.
    public func loadCopies() async throws {
        try await cube.cache.refresh()
        try await accounts.tokenDirectory.refresh()
        try await approvals.rules.seed(now: now())
    }
}

import DAO
import FCM
import Logging
import Mongo
@testable import Relay

/// A relay on one test's database and a fake clock: the outbox worker with its fan-out, quiet hours and
/// acknowledgements, sending to FCM in memory, and the stores a test writes its scenario through (as the hub's
/// services would) and reads the outcome back from.
struct RelayFixture {
    let database: MongoDatabase
    let clock: FakeClock
    let fcm = InMemoryFCM()
    let logger: Logger
    let outbox: OutboxWorker
    let quiet: QuietHoursStores
    let messages: MessageDAO
    let devices: DeviceDAO
    let deliveries: DeliveryDAO

    /// The worker's settings in these tests: a retry's first wait between 5 and 10 s (jitter in its upper half).
    static let configuration = OutboxWorker.Configuration(
        concurrency: 4, lease: .seconds(5), pollInterval: .milliseconds(50), recordWindow: .milliseconds(5),
        retry: RetryPolicy(base: .seconds(10), cap: .seconds(300)), project: "test", fanOutInFlight: 8,
        sendRate: 1_000)

    /// The workers' logger: only what is critical (the failures these tests cause are warnings).
    static var quietLogger: Logger {
        var logger = Logger(label: "relay-tests")
        logger.logLevel = .critical
        return logger
    }

    init(database: MongoDatabase, clock: FakeClock = FakeClock()) {
        self.database = database
        self.clock = clock
        let logger = Self.quietLogger
        self.logger = logger
        let now = clock.unix
        quiet = QuietHoursStores(database: database, now: now)
        messages = MessageDAO(database: database, now: now)
        devices = DeviceDAO(database: database, now: now)
        deliveries = DeliveryDAO(database: database, now: now)
        outbox = OutboxWorker(
            outbox: OutboxDAO(database: database), progress: RelayProgressDAO(database: database),
            pauses: RelayPauseDAO(database: database), handoff: OutboxHandoff(), sender: fcm,
            fanOut: FanOutStores(database: database, now: now), quietHours: quiet,
            observers: [AckAudience(database: database, logger: logger, now: now)],
            configuration: Self.configuration, logger: logger, now: now)
    }

    // MARK: Scenario

    /// A topic message due now (or `dueIn` ms from now), for any worker to claim.
    func topicMessage(
        _ topicKey: String = "66a0c0ffee00000000000001-66a0c0ffee00000000000002-66a0c0ffee00000000000003",
        distribution: Distribution = .alert, dueIn: Int64 = 0
    ) async throws -> Message {
        let plan = RelayPlan(dueAt: clock.now + dueIn, deadlineAt: clock.now + 3_600_000)
        return try await messages.add(
            MessageDraft(
                title: "Snow day", desc: "School is closed", message: "Stay home today.", topicKey: topicKey,
                distribution: distribution, sender: "office",
                extra: ["relay": .document(plan.document(for: distribution))]))
    }

    /// A message to `persons`, due now, asking for an acknowledgement when `ack` is given.
    func personsMessage(_ persons: [String], ack: AckRequest? = nil) async throws -> Message {
        let plan = RelayPlan(dueAt: clock.now, deadlineAt: clock.now + 3_600_000, addressed: true)
        var extra: BSONDocument = ["relay": .document(plan.document(for: .alert))]
        if let ack { extra["ack"] = .document(ack.document) }
        return try await messages.add(
            MessageDraft(
                title: "Trip form", desc: "Sign by Friday", message: "Please sign the trip form.", topicKey: "",
                recipients: Recipients(persons: persons), distribution: .alert, sender: "office", extra: extra))
    }

    /// A registered Android device with `token`, bound to `person`, in its quiet hours `quietHours` when given.
    func device(_ token: String, person: String, quietHours: QuietHours? = nil) async throws -> Device {
        let (registered, _) = try await devices.register(
            registration: token, platform: .android, locale: "en", appVersion: "1.0", secretHash: "hash-\(token)")
        var device = try await devices.bind(registered.id, person: person)
        if let quietHours {
            device = try await devices.setQuietHours(device.id, quietHours, topic: "quiet-\(token)").after
        }
        return device
    }

    // MARK: Outcome

    /// The message's relay state as stored now.
    func relay(_ message: Message) async throws -> RelayState? {
        try await OutboxDAO(database: database).message(message.id).flatMap { RelayState(message: $0.document) }
    }

    /// The message's deliveries as stored now, by device.
    func deliveries(of message: Message) async throws -> [ObjectID: Delivery] {
        let page = try await deliveries.page(of: message.id, after: nil, limit: 100)
        return Dictionary(page.map { ($0.device, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The message as stored now.
    func stored(_ message: Message) async throws -> BSONDocument? {
        try await database.collection(CollectionName.message).findOne(["_id": .objectID(message.id)])
    }
}

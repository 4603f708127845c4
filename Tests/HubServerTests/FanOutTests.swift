import Curl
import DAO
import FakeFCM
import FCM
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Logging
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// Messages to persons and groups, device by device: the resolution to devices, one token send each through the
/// relay's fan-out, the outcomes recorded in `deliveries`, back-pressure, a worker stopped mid fan-out, the send rate,
/// and GET /message/:msiKey/deliveries. Against the real database and the fake FCM.
@Suite("Sending to persons and groups, device by device", .tags(.faults))
struct FanOutTests {
    /// A phone as registration stores it, bound to `person` (nil: unbound).
    struct Phone: Sendable {
        let id = ObjectID()
        let token: String
        let person: String?
        var platform: Platform = .android

        init(_ token: String, person: String?, platform: Platform = .android) {
            self.token = token
            self.person = person
            self.platform = platform
        }
    }

    /// Stores `phones` as registered (and bound) devices, in one insert.
    static func seed(_ phones: [Phone], in database: MongoDatabase) async throws {
        let documents = phones.map { phone -> BSONDocument in
            var document: BSONDocument = [
                "_id": .objectID(phone.id), "registration": .string(phone.token),
                "platform": .string(phone.platform.rawValue), "secret_hash": "-", "state": "active",
                "created_at": 0, "updated_at": 0,
            ]
            if let person = phone.person { document["person"] = .string(person) }
            return document
        }
        for start in stride(from: 0, to: documents.count, by: 500) {
            try await database.collection(CollectionName.devices)
                .insertMany(Array(documents[start..<min(start + 500, documents.count)]))
        }
    }

    /// Stores a message to `recipients` as POST /message does, due now, for any worker to claim.
    static func store(
        to recipients: Recipients, data: [String: String] = [:], distribution: Distribution = .alert,
        sender: String = "bulletin-bot", dueIn: Duration = .zero,
        in database: MongoDatabase
    ) async throws -> Message {
        let now = UnixTime.nowMilliseconds()
        let plan = RelayPlan(dueAt: now + dueIn.milliseconds, deadlineAt: now + 3_600_000, addressed: true)
        return try await MessageDAO(database: database).add(
            MessageDraft(
                title: "Chess club", desc: "Meeting moved", message: "The chess club meets in room 12 today.",
                topicKey: "",
                recipients: recipients, data: data, distribution: distribution, sender: sender,
                extra: ["relay": .document(plan.document(for: distribution))]))
    }

    /// The `relay.state` of `message` as people see it (a direct message's from its worker's progress record).
    static func relayState(_ message: Message, in database: MongoDatabase) async throws -> String? {
        guard
            let stored = try await database.collection(CollectionName.message).findOne([
                "_id": .objectID(message.id)
            ]).flatMap(Message.init(document:))
        else { return nil }
        return try await RelayProgressDAO(database: database).resolved([stored])[0].document[path: "relay.state"]?
            .stringValue
    }

    /// Waits until `message` is stored as sent.
    static func waitUntilSent(_ message: Message, in database: MongoDatabase) async throws {
        try await eventually("the message is sent", within: .seconds(60)) {
            try await relayState(message, in: database) == "sent"
        }
    }

    /// The tokens of the sends the fake accepted, in order.
    static func tokens(_ fake: FakeFCM) -> [String] {
        fake.received.compactMap { $0.message["token"] as? String }
    }

    /// The relay settings of a hub that sends to `fake`.
    static func relay(to fake: FakeFCM) throws -> RelayConfiguration {
        let account = try fake.makeServiceAccount()
        var relay = RelayConfiguration(fcmEnvironment: [
            "GOOGLE_APPLICATION_CREDENTIALS": account.path,
            "FCM_ENDPOINT": fake.baseURL,
        ])
        relay.maxBacklog = HubHarness.testBacklogBound
        return relay
    }

    /// Runs `body` with the hub's own FCM client sending to `fake` (threads for `inFlight` requests at once).
    static func withClient<T: Sendable>(
        _ fake: FakeFCM, inFlight: Int,
        _ body: (FCMClient) async throws -> T
    ) async throws -> T {
        var configuration = try relay(to: fake)
        configuration.concurrency = inFlight
        let service = try #require(try FCMService(configuration: configuration, logger: Logger(label: "test")))
        do {
            let result = try await body(service.client)
            try? await service.httpClient.shutdown()
            return result
        } catch {
            try? await service.httpClient.shutdown()
            throw error
        }
    }

    /// A relay worker of its own on `database`, as a hub process runs it.
    static func worker(
        _ database: MongoDatabase, _ fcm: FCMClient, inFlight: Int, sendRate: Int = 100_000,
        retry: RetryPolicy = RetryPolicy()
    ) -> OutboxWorker {
        OutboxWorker(
            outbox: OutboxDAO(database: database), progress: RelayProgressDAO(database: database),
            pauses: RelayPauseDAO(database: database), handoff: OutboxHandoff(), sender: fcm,
            mapping: fcm.mappingOptions, fanOut: FanOutStores(database: database, now: UnixTime.nowMilliseconds),
            configuration: OutboxWorker.Configuration(
                concurrency: 4, lease: .seconds(3), pollInterval: .milliseconds(100), retry: retry, project: "msi-test",
                fanOutInFlight: inFlight, sendRate: sendRate))
    }

    /// `count` phones of one person each (`person-0` ...), and the group `all` of those persons.
    static func seedGroup(_ count: Int, in database: MongoDatabase) async throws -> [Phone] {
        let phones = (0..<count).map { Phone("token-\($0)", person: "person-\($0)") }
        try await seed(phones, in: database)
        _ = try await GroupDAO(database: database).replace(
            id: "all", name: "Everyone", access: [],
            persons: phones.compactMap(\.person))
        return phones
    }

    // MARK: Whom a message reaches

    @Test func eachDeviceOfThePersonsAndGroupMembersGetsOneRequestAndNoOtherDeviceAny() async throws {
        try await FakeFCM.with { fake in
            let ann = [Phone("ann-android", person: "ann"), Phone("ann-ios", person: "ann", platform: .ios)]
            let bob = Phone("bob-phone", person: "bob")  // named, and a member of chess: reached as named
            let cid = Phone("cid-phone", person: "cid")  // a member of chess and of drama: reached once
            let dee = Phone("dee-phone", person: "dee")  // named, but her device is unregistered
            let eve = Phone("eve-phone", person: "eve")  // in no audience
            let unbound = Phone("unbound-phone", person: nil)
            try await HubHarness.with(
                seed: { database in
                    try await Self.seed(ann + [bob, cid, dee, eve, unbound], in: database)
                    try await DeviceDAO(database: database).markUnregistered(registration: "dee-phone")
                    let groups = GroupDAO(database: database)
                    _ = try await groups.replace(
                        id: "chess", name: "Chess", access: [], persons: ["bob", "cid", "fay"])
                    _ = try await groups.replace(id: "drama", name: "Drama", access: [], persons: ["cid", "gus"])
                }, relay: try Self.relay(to: fake)
            ) { hub in
                let message = try await Self.store(
                    to: Recipients(persons: ["ann", "bob", "dee"], groups: ["chess", "drama"]), data: ["room": "12"],
                    in: hub.database)
                try await Self.waitUntilSent(message, in: hub.database)

                let tokens = Self.tokens(fake)
                #expect(tokens.sorted() == ["ann-android", "ann-ios", "bob-phone", "cid-phone"])
                let byToken = Dictionary(
                    fake.received.map { ($0.message["token"] as? String ?? "", $0) },
                    uniquingKeysWith: { first, _ in first })
                let bob = byToken["bob-phone"]?.data, cid = byToken["cid-phone"]?.data, ann = byToken["ann-ios"]?.data
                #expect(bob?["audience"] == "person" && bob?["group"] == nil)
                #expect(cid?["audience"] == "group" && cid?["group"] == "chess")
                #expect(ann?["room"] == "12" && ann?["msi_key"] == message.msiKey.hex)
                #expect(byToken["ann-ios"]?.message["notification"] != nil)

                // One delivery per device reached, each answered, written in bulk.
                let report = try await hub.request(
                    .get, "/message/\(message.msiKey.hex)/deliveries",
                    as: .communicator
                ).json()
                #expect(report[path: "counts.sent"]?.int64Value == 4 && report[path: "counts.pending"]?.int64Value == 0)
                #expect(report[path: "platforms.android.sent"]?.int64Value == 3)
                #expect(report[path: "platforms.ios.sent"]?.int64Value == 1)
                let stored = try await hub.database.collection(CollectionName.message)
                    .findOne(["_id": .objectID(message.id)])
                #expect(stored?[path: "relay.components.devices.resolved"]?.boolValue == true)
                #expect(stored?[path: "relay.components.devices.devices"]?.int64Value == 4)
                #expect(stored?[path: "relay.components.devices.state"] == "sent")
            }
        }
    }

    @Test func anUnregisteredTokenMarksItsDeliveryAndItsDeviceAndTheOthersAreSent() async throws {
        try await FakeFCM.with { fake in
            let phones = [Phone("kept-1", person: "p1"), Phone("gone-2", person: "p2"), Phone("kept-3", person: "p3")]
            fake.markUnregistered("gone-2")
            try await HubHarness.with(
                seed: { try await Self.seed(phones, in: $0) },
                relay: try Self.relay(to: fake)
            ) { hub in
                let message = try await Self.store(
                    to: Recipients(persons: ["p1", "p2", "p3"]),
                    distribution: .information, in: hub.database)
                try await Self.waitUntilSent(message, in: hub.database)
                #expect(Self.tokens(fake).sorted() == ["kept-1", "kept-3"])
                #expect(try await DeviceDAO(database: hub.database).get(phones[1].id).state == .unregistered)
                #expect(try await DeviceDAO(database: hub.database).get(phones[0].id).state == .active)
                let gone = try await hub.database.collection(CollectionName.deliveries)
                    .findOne(["_id": .string(Delivery.id(message: message.id, device: phones[1].id))])
                #expect(gone?["state"] == "unregistered" && gone?["code"] == "UNREGISTERED" && gone?["at"] != nil)
            }
        }
    }

    @Test func aResolutionBegunByAnotherAttemptSendsOnlyWhatHasNoAnswerYet() async throws {
        try await FakeFCM.with { fake in
            let phones = (0..<4).map { Phone("phone-\($0)", person: "person-\($0)") }
            try await HubHarness.with(
                seed: { try await Self.seed(phones, in: $0) },
                relay: try Self.relay(to: fake)
            ) { hub in
                // A worker that died mid fan-out: one device sent, one answered "try again later", the rest never
                // answered. Due only once that is in place, so the hub's relay cannot take it before.
                let message = try await Self.store(
                    to: Recipients(persons: phones.compactMap(\.person)),
                    dueIn: .seconds(3600), in: hub.database)
                let deliveries = DeliveryDAO(database: hub.database)
                let answered = phones.prefix(2).map {
                    Delivery(
                        message: message.id, device: $0.id, person: $0.person ?? "", group: nil,
                        platform: .android, registration: $0.token)
                }
                try await deliveries.record([
                    DeliveryOutcome(answered[0], state: .sent),
                    DeliveryOutcome(answered[1], state: .pending, code: "UNAVAILABLE"),
                ])
                try await hub.database.collection(CollectionName.message).updateOne(
                    ["_id": .objectID(message.id)],
                    [
                        "$set": [
                            "relay.components.devices.resolving": true,
                            "relay.due_at": .int64(UnixTime.nowMilliseconds()),
                        ]
                    ])
                try await Self.waitUntilSent(message, in: hub.database)
                #expect(Self.tokens(fake).sorted() == ["phone-1", "phone-2", "phone-3"])
                let counts = try await deliveries.counts(of: message.id)
                #expect(counts.byState[.sent] == 4 && counts.total == 4)
            }
        }
    }

    // MARK: Back-pressure, take-over and pace

    @Test func a429WithRetryAfterPausesTheFanOutAndTheRestIsSentAfter() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                let phones = try await Self.seedGroup(40, in: database)
                let message = try await Self.store(to: Recipients(groups: ["all"]), in: database)
                fake.failNext(3, status: 429, retryAfter: "1")
                try await Self.withClient(fake, inFlight: 8) { fcm in
                    // Google's minute after a 429 is the policy's default; this test takes FCM's Retry-After alone.
                    let retry = RetryPolicy(base: .milliseconds(100), cap: .seconds(1), quotaPause: nil)
                    let worker = Self.worker(database, fcm, inFlight: 4, retry: retry)
                    let running = Task { await worker.run() }
                    try await Self.waitUntilSent(message, in: database)
                    running.cancel()
                    await running.value
                }
                // Every device exactly once: the refused ones were sent again, none twice.
                let tokens = Self.tokens(fake)
                #expect(tokens.count == 40 && Set(tokens) == Set(phones.map(\.token)))
                let log = fake.sendLog
                let first429 = try #require(log.first { $0.status == 429 }?.at)
                // Only what was in flight when FCM said 429 was answered within its Retry-After.
                let early = log.filter { $0.status == 200 && $0.at < first429.addingTimeInterval(0.9) }
                #expect(early.count <= 4)
                // The pause was shared with the other replicas, and the message went back to the outbox between.
                #expect(try await database.collection(CollectionName.relayPause).findOne(["_id": "msi-test"]) != nil)
                let stored = try await database.collection(CollectionName.message)
                    .findOne(["_id": .objectID(message.id)])
                #expect((stored?[path: "relay.attempts"]?.int64Value ?? 0) >= 2)
                let counts = try await DeliveryDAO(database: database).counts(of: message.id)
                #expect(counts.byState[.sent] == 40 && counts.total == 40)
            }
        }
    }

    @Test func aWorkerStoppedMidFanOutIsTakenOverAndNoDeviceIsSentTwiceBeyondWhatWasInFlight() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                let phones = try await Self.seedGroup(300, in: database)
                let message = try await Self.store(
                    to: Recipients(groups: ["all"]), distribution: .information,
                    in: database)
                fake.setResponseDelay(.milliseconds(40))
                let inFlight = 10
                try await Self.withClient(fake, inFlight: 2 * inFlight) { fcm in
                    let first = Self.worker(database, fcm, inFlight: inFlight)
                    let running = Task { await first.run() }
                    try await eventually(within: .seconds(30)) { fake.received.count >= 80 }
                    running.cancel()
                    await running.value
                    let sentByFirst = fake.received.count
                    #expect(sentByFirst < 300, "stopped mid fan-out")
                    #expect(try await Self.relayState(message, in: database) == "pending")

                    let second = Self.worker(database, fcm, inFlight: inFlight)
                    let taking = Task { await second.run() }
                    try await Self.waitUntilSent(message, in: database)
                    taking.cancel()
                    await taking.value
                }
                let tokens = Self.tokens(fake)
                #expect(Set(tokens) == Set(phones.map(\.token)), "every device reached")
                #expect(tokens.count - 300 <= inFlight, "at most what was in flight is sent twice")
                let counts = try await DeliveryDAO(database: database).counts(of: message.id)
                #expect(counts.byState[.sent] == 300 && counts.total == 300)
            }
        }
    }

    @Test func theSendRateCapsThePermitsOfEveryWindow() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                let phones = try await Self.seedGroup(70, in: database)
                let message = try await Self.store(to: Recipients(groups: ["all"]), in: database)
                let rate = 25
                let used = try await Self.withClient(fake, inFlight: 8) { fcm in
                    let worker = Self.worker(database, fcm, inFlight: 8, sendRate: rate)
                    let running = Task { await worker.run() }
                    try await Self.waitUntilSent(message, in: database)
                    running.cancel()
                    await running.value
                    return try #require(worker.pacer).used
                }
                #expect(Set(Self.tokens(fake)) == Set(phones.map(\.token)))
                // Each send took a permit of a one-second window, never more than the rate of one (a permit whose
                // window was over before its send could go is dropped, and the send takes another).
                #expect(used.values.reduce(0, +) >= 70)
                #expect(used.values.allSatisfy { $0 <= rate }, "\(used)")
                #expect(used.count >= 3, "70 sends at 25 a second span at least three windows")
                // A window's permits are spread over it, not spent in a burst at its start: at 25 a second, a quarter
                // of a second holds about 6 sends (a burst would hold the window's 25); 15 leaves room for a stall.
                let times = fake.sendLog.map(\.at).sorted()
                let busiest =
                    times.indices.map { start in
                        times[start...].prefix { $0.timeIntervalSince(times[start]) < 0.25 }.count
                    }.max() ?? 0
                #expect(busiest <= 15, "\(busiest) sends within 250 ms")
                // The windows are the shared ones every replica takes from.
                let windows = try await database.collection(CollectionName.rateWindows).find([:])
                #expect(windows.contains { $0["_id"]?.stringValue?.hasPrefix("fcm-send:msi-test:") == true })
            }
        }
    }

    @Test func aMessagePostedToAGroupReachesItsMembersDevicesAndItsReportIsItsSenders() async throws {
        try await FakeFCM.with { fake in
            let phones = [
                Phone("m1-a", person: "m1"), Phone("m1-b", person: "m1", platform: .ios),
                Phone("m2", person: "m2"), Phone("outsider", person: "m3"),
            ]
            try await HubHarness.with(
                seed: { database in
                    try await Self.seed(phones, in: database)
                    _ = try await GroupDAO(database: database).replace(
                        id: "class-7b", name: "7B", access: [],
                        persons: ["m1", "m2"])
                }, relay: try Self.relay(to: fake)
            ) { hub in
                let response = try await hub.request(
                    .post, "/message", as: .admin,
                    json: """
                        {"title": "Trip", "desc": "Bring a coat", "message": "The trip leaves at 8.",
                         "distribution": "Alert", "to": {"groups": ["class-7b"]}, "data": {"link": "msi://trips/7b"}}
                        """)
                #expect(response.status == .created)
                let key = try #require(try response.json()["msi_key"]?.stringValue)
                let path = "/message/\(key)/deliveries"
                try await eventually {
                    try await hub.request(.get, path, as: .admin).json()[path: "counts.sent"]?.int64Value == 3
                }
                #expect(Self.tokens(fake).sorted() == ["m1-a", "m1-b", "m2"])
                #expect(
                    fake.received.allSatisfy {
                        $0.data["link"] == "msi://trips/7b" && $0.data["group"] == "class-7b"
                    })
                // Not the communicator's message: no report for them.
                #expect(try await hub.request(.get, path, as: .communicator).status == .notFound)
            }
        }
    }

    @Test func fcmSendRateIsReadFromTheEnvironmentWithItsDefaultAndBounds() throws {
        #expect(try HubConfiguration.fromEnvironment([:]).relay.sendRate == 10_000)
        #expect(try HubConfiguration.fromEnvironment(["FCM_SEND_RATE": "3000"]).relay.sendRate == 3_000)
        #expect(HubConfiguration.variables.contains("FCM_SEND_RATE"))
        for bad in ["0", "-5", "fast"] {
            #expect(throws: ConfigurationError.self) { try HubConfiguration.fromEnvironment(["FCM_SEND_RATE": bad]) }
        }
    }

    // MARK: Withdrawn or corrected while it is being sent

    /// A hub sending to `fake` at `rate` per-device sends a second, `inFlight` of one message at once.
    static func pacedRelay(to fake: FakeFCM, rate: Int, inFlight: Int) throws -> RelayConfiguration {
        var relay = try relay(to: fake)
        relay.sendRate = rate
        relay.fanOutInFlight = inFlight
        return relay
    }

    /// The requests the fake took that carry `message` itself (neither a correction nor a withdrawal).
    static func originals(_ fake: FakeFCM, _ message: Message) -> [FakeFCMRequest] {
        fake.received.filter {
            $0.data["msi_key"] == message.msiKey.hex && $0.data["correction"] == nil && $0.data["withdrawn"] == nil
        }
    }

    /// The tokens of `requests`.
    static func tokens(_ requests: [FakeFCMRequest]) -> [String] {
        requests.compactMap { $0.message["token"] as? String }
    }

    @Test func aWithdrawalDuringAFanOutStopsItAndOnlyTheDevicesReachedGetTheWithdrawal() async throws {
        try await FakeFCM.with { fake in
            let inFlight = 10
            try await HubHarness.with(
                seed: { _ = try await Self.seedGroup(300, in: $0) },
                relay: try Self.pacedRelay(to: fake, rate: 100, inFlight: inFlight)
            ) { hub in
                let message = try await Self.store(
                    to: Recipients(groups: ["all"]), distribution: .information,
                    in: hub.database)
                // About a second into the fan-out (100 sends a second).
                try await eventually("the fan-out is under way", within: .seconds(30)) {
                    Self.originals(fake, message).count >= 100
                }
                let answer = try await hub.request(
                    .delete, "/message/\(message.msiKey.hex)?reason=False%20alarm",
                    as: .admin)
                let atAnswer = Self.originals(fake, message).count
                #expect(answer.status == .ok, "\(answer.text)")
                // Sent: the withdrawal went to every device reached.
                try await Self.waitUntilSent(message, in: hub.database)
                try await Task.sleep(for: .seconds(1))
                let originals = Self.originals(fake, message)
                #expect(
                    originals.count <= atAnswer + inFlight,
                    "\(atAnswer) sent when the DELETE answered, \(originals.count) in all")
                #expect(originals.count < 300)
                let withdrawals = fake.received.filter {
                    $0.data["msi_key"] == message.msiKey.hex && $0.data["withdrawn"] == "1"
                }
                let reached = Self.tokens(originals)
                #expect(Set(Self.tokens(withdrawals)) == Set(reached) && withdrawals.count == reached.count)
                // None gets the original after its withdrawal.
                let lastOriginal = try #require(originals.map(\.receivedAt).max())
                #expect(withdrawals.allSatisfy { $0.receivedAt >= lastOriginal })
                #expect(withdrawals.allSatisfy { $0.message["notification"] == nil })
            }
        }
    }

    @Test func aWithdrawalStoredByAnotherReplicaStopsTheFanOutWithinASecond() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                _ = try await Self.seedGroup(300, in: database)
                let message = try await Self.store(
                    to: Recipients(groups: ["all"]), distribution: .information,
                    in: database)
                let inFlight = 10
                try await Self.withClient(fake, inFlight: 2 * inFlight) { fcm in
                    let worker = Self.worker(database, fcm, inFlight: inFlight, sendRate: 100)
                    let running = Task { await worker.run() }
                    try await eventually("the fan-out is under way", within: .seconds(30)) {
                        Self.originals(fake, message).count >= 100
                    }
                    // Withdrawn by another process: this worker learns of it from the database alone.
                    let stored = try #require(try await OutboxDAO(database: database).message(message.id))
                    let state = try #require(RelayState(message: stored.document))
                    let now = UnixTime.nowMilliseconds()
                    let notice = RelayNotice(
                        component: .withdrawal, dueAt: now, deadlineAt: now + 3_600_000,
                        handover: .live)
                    #expect(
                        try await MessageDAO(database: database).withdraw(
                            msiKey: message.msiKey, expected: state, at: now, by: "admin-script", reason: nil,
                            cancel: false, notice: notice))
                    let atWrite = Self.originals(fake, message).count
                    try await Self.waitUntilSent(message, in: database)
                    running.cancel()
                    await running.value
                    let originals = Self.originals(fake, message)
                    // At 100 sends a second: at most a second's sends and those in flight after the write.
                    #expect(originals.count <= atWrite + 100 + inFlight, "\(atWrite) at the write, \(originals.count)")
                    #expect(originals.count < 300)
                    let withdrawals = fake.received.filter {
                        $0.data["msi_key"] == message.msiKey.hex && $0.data["withdrawn"] == "1"
                    }
                    #expect(Set(Self.tokens(withdrawals)) == Set(Self.tokens(originals)))
                }
            }
        }
    }

    @Test func aCorrectionDuringAFanOutIsTakenTheRestGetTheNewTextAndTheDevicesReachedTheCorrection() async throws {
        try await FakeFCM.with { fake in
            let inFlight = 10
            try await HubHarness.with(
                seed: { _ = try await Self.seedGroup(300, in: $0) },
                relay: try Self.pacedRelay(to: fake, rate: 100, inFlight: inFlight)
            ) { hub in
                let message = try await Self.store(to: Recipients(groups: ["all"]), in: hub.database)
                try await eventually("the fan-out is under way", within: .seconds(30)) {
                    Self.originals(fake, message).count >= 100
                }
                let answer = try await hub.request(
                    .put, "/message/\(message.msiKey.hex)", as: .admin,
                    json: #"{"title": "Chess club moved"}"#)
                let atAnswer = Self.originals(fake, message).count
                #expect(answer.status == .ok, "\(answer.text)")
                try await Self.waitUntilSent(message, in: hub.database)
                let originals = Self.originals(fake, message)
                // Every device once: those before the correction with the old text, the others with the new.
                #expect(originals.count == 300 && Set(Self.tokens(originals)).count == 300)
                let old = originals.filter { $0.data["title"] == "Chess club" }
                let new = originals.filter { $0.data["title"] == "Chess club moved" }
                #expect(old.count + new.count == 300)
                #expect(old.count <= atAnswer + inFlight, "\(atAnswer) sent when the PUT answered, \(old.count) old")
                #expect(!new.isEmpty)
                let corrections = fake.received.filter {
                    $0.data["msi_key"] == message.msiKey.hex && $0.data["correction"] == "1"
                }
                #expect(Set(Self.tokens(corrections)) == Set(Self.tokens(old)) && corrections.count == old.count)
                #expect(corrections.allSatisfy { $0.data["title"] == "Chess club moved" })
            }
        }
    }

    // MARK: The report

    @Test func theDeliveriesRouteShowsCountsAndPagesToTheSenderAndAdminsOnly() async throws {
        try await FakeFCM.with { fake in
            let phones = (0..<5).map {
                Phone("phone-\($0)", person: "person-\($0 % 3)", platform: $0 < 2 ? .ios : .android)
            }
            try await HubHarness.with(
                seed: { try await Self.seed(phones, in: $0) },
                relay: try Self.relay(to: fake)
            ) { hub in
                fake.markUnregistered("phone-4")
                let message = try await Self.store(
                    to: Recipients(persons: ["person-0", "person-1", "person-2"]),
                    in: hub.database)
                try await Self.waitUntilSent(message, in: hub.database)
                let path = "/message/\(message.msiKey.hex)/deliveries"

                let report = try await hub.request(.get, path, as: .communicator)
                #expect(report.status == .ok)
                let body = try report.json()
                #expect(
                    ["pending", "sent", "failed", "unregistered"].map { body[path: "counts.\($0)"]?.int64Value }
                        == [0, 4, 0, 1])
                #expect(body[path: "platforms.ios.sent"]?.int64Value == 2)
                #expect(body[path: "platforms.android.unregistered"]?.int64Value == 1)
                #expect(body["next"] == .null)
                #expect(
                    !String(decoding: report.body.readableBytesView, as: UTF8.self).contains("phone-"),
                    "no registration token is listed")

                // Pages by cursor: every device once, in order.
                var seen: [String] = []
                var cursor: String?
                repeat {
                    let page = try await hub.request(
                        .get, path + "?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                        as: .admin
                    ).json()
                    let rows = page["deliveries"]?.arrayValue?.compactMap(\.documentValue) ?? []
                    #expect(rows.count <= 2)
                    seen += rows.compactMap { $0["device"]?.stringValue }
                    if let gone = rows.first(where: { $0["state"] == "unregistered" }) {
                        #expect(gone["code"] == "UNREGISTERED" && gone["via"] == "person" && gone["at"] != nil)
                    }
                    cursor = page["next"]?.stringValue
                } while cursor != nil
                #expect(seen == phones.map(\.id.hex).sorted())

                // A device is stored once answered: those the message reaches and no answer has come for yet count as
                // pending (here two more devices, as if still in flight).
                try await hub.database.collection(CollectionName.message).updateOne(
                    ["_id": .objectID(message.id)], ["$set": ["relay.components.devices.devices": .int64(7)]])
                let midway = try await hub.request(.get, path, as: .admin).json()
                #expect(
                    ["pending", "sent", "unregistered"].map { midway[path: "counts.\($0)"]?.int64Value } == [2, 4, 1])

                // Another communicator is told there is no such message; no caller at all is not authenticated.
                let other = try await hub.request(.get, path, as: .basic("ann", HubHarness.annPassword))
                #expect(other.status == .notFound)
                #expect(try other.json()[path: "error.code"] == "message_not_found")
                #expect(try await hub.request(.get, path).status == .unauthorized)
                #expect(try await hub.request(.get, path + "?limit=501", as: .admin).status == .badRequest)
                #expect(try await hub.request(.get, path + "?cursor=zz", as: .admin).status == .badRequest)
            }
        }
    }
}

import DAO
import FakeFCM
import FCM
import HubCore
import Mongo
import MongoTestSupport
import Relay
import Testing

/// Rollouts: a subject every device should receive reaches the registry at FCM's pace, its records behind the
/// calls; a stop mid-page, and the registry changing under a page, leave every device as its wishes say.
@Suite("Rollouts of a subject to every device")
struct RolloutTests {
    static let topic = DeviceTests.recommended

    /// `count` active devices registered as POST /device registers them, with no wish for `topic` yet.
    static func register(_ count: Int, prefix: String, in database: MongoDatabase) async throws -> [Device] {
        let devices = DeviceDAO(database: database)
        var registered: [Device] = []
        for index in 0..<count {
            registered.append(
                try await devices.register(
                    registration: "\(prefix)-\(index)", platform: index % 2 == 0 ? .ios : .web,
                    locale: nil, appVersion: nil, secretHash: "x"
                ).device)
        }
        return registered
    }

    @Test func aHubKilledMidRolloutLeavesItToTheNextWhoReachesEveryDeviceOnce() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                try await HubHarness.legacy(database)
                _ = try await Self.register(300, prefix: "rolled", in: database)
                try await RolloutDAO(database: database).start(Self.topic)
                let account = try fake.makeServiceAccount()
                let environment = [
                    "GOOGLE_APPLICATION_CREDENTIALS": account.path, "FCM_ENDPOINT": fake.baseURL,
                    "RELAY_LEASE_SECONDS": "2",
                ]
                fake.setResponseDelay(.milliseconds(150))
                let first = try await HubProcess(mongoURI: try HubProcess.uri(of: database), environment: environment)
                try await eventually(within: .seconds(30)) { fake.subscribers(of: Self.topic).count >= 40 }
                await first.kill()
                let reachedBeforeTheKill = fake.subscribers(of: Self.topic).count
                #expect(reachedBeforeTheKill < 300)

                fake.setResponseDelay(nil)
                let second = try await HubProcess(mongoURI: try HubProcess.uri(of: database), environment: environment)
                defer { second.stop() }
                let rollouts = database.collection(CollectionName.rollouts)
                let subscriptions = database.collection(CollectionName.subscriptions)
                try await eventually(within: .seconds(30)) { try await rollouts.countDocuments([:]) == 0 }
                try await eventually(within: .seconds(30)) {
                    try await subscriptions.countDocuments(["pending": true]) == 0
                }
                #expect(fake.subscribers(of: Self.topic).count == 300)
                // One record per device, each saying what FCM has.
                #expect(try await subscriptions.countDocuments(["topic": .string(Self.topic)]) == 300)
                #expect(
                    try await subscriptions.countDocuments([
                        "topic": .string(Self.topic), "applied": true, "want": true,
                    ]) == 300)
                // Only what the first process called without recording was called again.
                #expect(
                    fake.subscriptionCallCount < 300 + 2 * 16 + reachedBeforeTheKill,
                    "\(fake.subscriptionCallCount) calls for 300 devices")
            }
        }
    }

    @Test func devicesThatOptOutAreDeletedOrChangeTokenMidRolloutEndAsTheirWishesSay() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                try await HubHarness.legacy(database)
                let services = HubServices(pool: try TestDatabase.sharedPool(), database: database)
                try await services.cube.cache.refresh()
                // Four full pages of 16, called while the pages before them settle, then an empty one.
                let phones = try await Self.register(64, prefix: "moving", in: database)
                try await RolloutDAO(database: database).start(Self.topic)
                // Slow calls at 20 a second: the changes below land while the page is being called.
                fake.setResponseDelay(.milliseconds(100))
                try await DeviceTests.withFCM(fake) { fcm in
                    let reconciler = DeviceTests.reconciler(
                        database, fcm: fcm, configuration: .init(rate: 20, rolloutPage: 16, repairInterval: nil))
                    let rollout = Task { try await reconciler.rollOutOnce() }
                    try await Task.sleep(for: .milliseconds(300))
                    // An early device and a late one of each kind.
                    for index in [1, 55] { try await services.devices.unsubscribe(phones[index], from: Self.topic) }
                    for index in [2, 56] { try await services.devices.delete(phones[index]) }
                    for index in [3, 57] {
                        _ = try await services.devices.update(
                            phones[index], registration: "moved-\(index)", locale: nil, appVersion: nil)
                    }
                    #expect(try await rollout.value)
                    #expect(
                        try await reconciler.rollOutOnce() == false,
                        "the empty page after the last full one ends the rollout")
                    try await eventually(within: .seconds(30)) {
                        try await reconciler.applyOnce()
                        return try await SubscriptionDAO(database: database).backlog().count == 0
                    }
                }
                let subscribers = Set(fake.subscribers(of: Self.topic))
                for index in [1, 55, 2, 56, 3, 57] {
                    #expect(!subscribers.contains("moving-\(index)"), "moving-\(index)")
                }
                #expect(subscribers.contains("moved-3") && subscribers.contains("moved-57"))
                #expect(subscribers.count == 64 - 4)
                let records = database.collection(CollectionName.subscriptions)
                #expect(try await records.countDocuments(["registration": "moving-2"]) == 0)
                #expect(
                    try await records.countDocuments(["registration": "moving-55", "want": false, "applied": false])
                        == 1)
                #expect(
                    try await records.countDocuments(["topic": .string(Self.topic), "want": true, "applied": true])
                        == 60)
            }
        }
    }

    @Test func devicesTheRolloutHasNotReachedShowItPendingAndCountInTheAudience() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                try await HubHarness.legacy(database)
                let services = HubServices(pool: try TestDatabase.sharedPool(), database: database)
                try await services.cube.cache.refresh()
                let phones = try await Self.register(4, prefix: "waiting", in: database)
                try await services.devices.unsubscribe(phones[0], from: Self.topic)
                try await RolloutDAO(database: database).start(Self.topic)

                let shown = try await services.devices.subscriptions(of: phones[1])
                #expect(shown.map(\.topicKey) == [Self.topic] && shown.first?.applied == false)
                #expect(try await services.devices.topicKeys(of: phones[1]) == [Self.topic])
                // An opt-out stays one.
                #expect(try await services.devices.subscriptions(of: phones[0]).isEmpty)
                let audience = try await services.devices.audience(of: Self.topic)
                #expect(audience.total == 3)
                #expect(audience.byPlatform[.ios]?.pending == 1 && audience.byPlatform[.web]?.pending == 2)
                #expect(try await services.devices.audienceSizes()[Self.topic] == 3)

                // A subject deleted meanwhile cancels it; the reconciler ends it before it takes any other further.
                try await RolloutDAO(database: database).start(DeviceTests.optional)
                try await Task.sleep(for: .milliseconds(5))
                try await RolloutDAO(database: database).start(Self.topic)  // started over: now the newer one
                try await RolloutDAO(database: database).cancel(prefix: Self.topic, exact: true)
                #expect(
                    try await services.devices.subscriptions(of: phones[1]).map(\.topicKey) == [DeviceTests.optional])
                try await DeviceTests.withFCM(fake) { fcm in
                    let reconciler = DeviceTests.reconciler(
                        database, fcm: fcm, configuration: .init(repairInterval: nil))
                    #expect(try await reconciler.rollOutOnce())
                    #expect(fake.subscriptionCallCount == 0)
                    let left = try await RolloutDAO(database: database).all()
                    #expect(left.map(\.topic) == [DeviceTests.optional])
                }
                let records = database.collection(CollectionName.subscriptions)
                #expect(try await records.countDocuments(["topic": .string(Self.topic), "gone": ["$ne": true]]) == 0)
            }
        }
    }
}

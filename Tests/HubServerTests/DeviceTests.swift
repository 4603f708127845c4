import Curl
import DAO
import FakeFCM
import FCM
import Foundation
import HTTPTypes
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Logging
import Mongo
import MongoTestSupport
import Relay
import Testing

/// Devices and their subscriptions end to end: the device routes of a real hub, its reconciler, and the fake FCM's
/// topic subscription API over HTTP.
@Suite("Devices and subscriptions", .tags(.faults))
struct DeviceTests {
    static let forced = Legacy.hoursTopic
    static let optional = RelayOutboxTests.booksTopic
    static let recommended = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e05-5a0b1c2d3e4f5a6b7c8d9e06"

    /// A hub seeded with the legacy channel whose relay and reconciler talk to `fake`.
    static func with(
        _ fake: FakeFCM, devices: DeviceConfiguration = DeviceConfiguration(registrationsPerMinute: 100_000),
        _ body: @Sendable (HubHarness) async throws -> Void
    ) async throws {
        try await HubHarness.with(
            seed: HubHarness.legacy, relay: try RelayOutboxTests.relay(to: fake), devices: devices, body)
    }

    @Test func registeringGivesExactlyTheForcedAndRecommendedTopicsAtTheFake() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                let phone = try await hub.register("token-a")
                #expect(phone.status == .created)
                #expect(Set(phone.topics) == [Self.forced, Self.recommended])
                #expect(!phone.text.contains("token-a"))
                try await eventually { fake.subscriptions(of: "token-a") == [Self.forced, Self.recommended] }
                try await eventually {
                    try await hub.subscriptions(phone).allSatisfy { $0["applied"]?.boolValue == true }
                }

                // The same registration again, with the device's secret: the same device, a fresh secret; the old
                // one stops working.
                let again = try await hub.register("token-a", secret: phone.secret)
                #expect(again.status == .ok)
                #expect(again.deviceID == phone.deviceID && again.secret != phone.secret)
                #expect(
                    try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret)).status
                        == .unauthorized)
                let view = try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(again.secret))
                #expect(view.status == .ok && !view.text.contains("token-a"))
                // Nothing leaks the registration: no secret, no token, in the database's device document but the hash.
                let stored = try #require(try await hub.database.collection(CollectionName.devices).findOne([:]))
                #expect(stored["secret_hash"]?.stringValue != again.secret)

                // Bad input changes nothing.
                let bad = try await hub.request(
                    .post, "/device", json: #"{"registration": "has space", "platform": "ios"}"#)
                #expect(bad.status == .unprocessableContent)
                #expect(
                    try await hub.request(.post, "/device", json: #"{"registration": "x", "platform": "nokia"}"#)
                        .errorCode
                        == "invalid_field")
                #expect(try await hub.database.collection(CollectionName.devices).countDocuments() == 1)
            }
        }
    }

    @Test func aForcedUnsubscribeIs409ARecommendedOneLeavesAndAnOptionalOneJoins() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                let phone = try await hub.register("token-b")
                let forced = try await hub.request(
                    .delete, "/device/\(phone.deviceID)/subscriptions/\(Self.forced)",
                    as: .token(phone.secret))
                #expect(forced.status == .conflict && forced.errorCode == "forced_subscription")
                #expect(
                    try await hub.request(
                        .delete, "/device/\(phone.deviceID)/subscriptions/\(Self.recommended)",
                        as: .token(phone.secret)
                    ).status == .noContent)
                let joined = try await hub.request(
                    .put, "/device/\(phone.deviceID)/subscriptions/\(Self.optional)",
                    as: .token(phone.secret))
                #expect(joined.status == .ok)
                #expect(try joined.json()["subject_name"] == "New books")
                let unknown = try await hub.request(
                    .put, "/device/\(phone.deviceID)/subscriptions/nope-nope-nope",
                    as: .token(phone.secret))
                #expect(unknown.status == .notFound && unknown.errorCode == "topic_not_found")
                #expect(try await hub.request(.get, "/device/\(phone.deviceID)/subscriptions").status == .unauthorized)
                try await eventually { fake.subscriptions(of: "token-b") == [Self.forced, Self.optional] }
                #expect(
                    Set(try await hub.subscriptions(phone).compactMap { $0["topic_key"]?.stringValue })
                        == [Self.forced, Self.optional])
                // A later registration of the same token, by the same device, keeps the opt-out.
                #expect(try await hub.register("token-b", secret: phone.secret).deviceID == phone.deviceID)
                try await Task.sleep(for: .milliseconds(300))
                #expect(fake.subscriptions(of: "token-b") == [Self.forced, Self.optional])
            }
        }
    }

    @Test func aTokenChangeMovesEverySubscription() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                let phone = try await hub.register("old-token")
                try await eventually { fake.subscriptions(of: "old-token").count == 2 }
                let moved = try await hub.request(
                    .put, "/device/\(phone.deviceID)", as: .token(phone.secret),
                    json: #"{"registration": "new-token", "locale": "fr-CH"}"#)
                #expect(moved.status == .ok)
                #expect(try moved.json()["locale"] == "fr-CH")
                // The new locale's language topic comes with it (LanguageTopicTests).
                try await eventually {
                    fake.subscriptions(of: "new-token") == [Self.forced, Self.recommended, "lang-fr"]
                        && fake.subscriptions(of: "old-token").isEmpty
                }
            }
        }
    }

    @Test func aKnownTokenWithoutItsDevicesSecretGetsANewDeviceAndTheOldOneIsRetired() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                let phone = try await hub.register("taken-token")
                // The phone chose: the optional subject joined, the Recommended one left.
                #expect(
                    try await hub.request(
                        .put, "/device/\(phone.deviceID)/subscriptions/\(Self.optional)",
                        as: .token(phone.secret)
                    ).status == .ok)
                #expect(
                    try await hub.request(
                        .delete, "/device/\(phone.deviceID)/subscriptions/\(Self.recommended)",
                        as: .token(phone.secret)
                    ).status == .noContent)
                try await eventually { fake.subscriptions(of: "taken-token") == [Self.forced, Self.optional] }

                // Someone who knows the token, not the device's secret: a new device, never the old one's id.
                let stranger = try await hub.register("taken-token")
                #expect(stranger.status == .created)
                #expect(!stranger.deviceID.isEmpty && stranger.deviceID != phone.deviceID)
                #expect(!stranger.text.contains(phone.deviceID) && !stranger.text.contains("taken-token"))
                // The old device is retired: its id and its secret open nothing.
                #expect(
                    try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret)).status
                        == .unauthorized)
                #expect(
                    try await hub.request(.get, "/device/\(phone.deviceID)/subscriptions", as: .token(phone.secret))
                        .status == .unauthorized)
                #expect(
                    try await hub.request(.get, "/device/\(stranger.deviceID)", as: .token(stranger.secret)).status
                        == .ok)
                let devices = hub.database.collection(CollectionName.devices)
                #expect(try await devices.countDocuments(["registration": "taken-token"]) == 1)
                // The registration's subscriptions are the new device's, every Forced and Recommended subject wanted:
                // the opt-out was the old owner's choice, not the new one's.
                #expect(Set(stranger.topics) == [Self.forced, Self.recommended, Self.optional])
                let wishes = try await hub.database.collection(CollectionName.subscriptions).find([
                    "registration": "taken-token"
                ])
                #expect(!wishes.isEmpty && wishes.allSatisfy { $0["device"]?.objectIDValue?.hex == stranger.deviceID })
                try await eventually {
                    fake.subscriptions(of: "taken-token") == [Self.forced, Self.recommended, Self.optional]
                }

                // A wrong secret proves nothing: a new device again, the stranger's retired in turn.
                let guess = try await hub.register("taken-token", secret: "msd_" + String(repeating: "x", count: 43))
                #expect(
                    guess.status == .created && guess.deviceID != stranger.deviceID && guess.deviceID != phone.deviceID)
                #expect(
                    try await hub.request(.get, "/device/\(stranger.deviceID)", as: .token(stranger.secret)).status
                        == .unauthorized)
                // The right secret keeps the device: the same id, a new secret.
                let owner = try await hub.register("taken-token", secret: guess.secret)
                #expect(owner.status == .ok && owner.deviceID == guess.deviceID && owner.secret != guess.secret)
                #expect(try await devices.countDocuments(["registration": "taken-token"]) == 1)
            }
        }
    }

    @Test func concurrentRegistrationsOfAKnownTokenLeaveExactlyOneDevice() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                let devices = hub.database.collection(CollectionName.devices)
                let wishes = hub.database.collection(CollectionName.subscriptions)
                var previous = try await hub.register("raced-token")
                for round in 0..<3 {
                    async let first = hub.register("raced-token")
                    async let second = hub.register("raced-token")
                    async let third = hub.register("raced-token")
                    let answers = try await [first, second, third]
                    // Each is a new device, or (its place taken again and again meanwhile) a refusal to try again.
                    #expect(answers.allSatisfy { $0.status == .created || $0.status == .conflict }, "round \(round)")
                    let live = try await devices.find(["registration": "raced-token"]).compactMap {
                        $0["_id"]?.objectIDValue?.hex
                    }
                    #expect(live.count == 1, "round \(round)")
                    let winner = try #require(answers.first { $0.deviceID == live.first })
                    #expect(
                        try await hub.request(.get, "/device/\(winner.deviceID)", as: .token(winner.secret)).status
                            == .ok)
                    for loser in answers + [previous]
                    where loser.status == .created && loser.deviceID != winner.deviceID {
                        #expect(
                            try await hub.request(.get, "/device/\(loser.deviceID)", as: .token(loser.secret)).status
                                == .unauthorized)
                    }
                    // The wishes follow the device that stayed.
                    let holders = Set(
                        try await wishes.find(["registration": "raced-token"]).compactMap {
                            $0["device"]?.objectIDValue?.hex
                        })
                    #expect(holders == [winner.deviceID], "round \(round)")
                    #expect(
                        Set(try await hub.subscriptions(winner).compactMap { $0["topic_key"]?.stringValue })
                            == [Self.forced, Self.recommended])
                    previous = winner
                }
            }
        }
    }

    @Test func theAppKeyIsComparedWhole() async throws {
        #expect(DeviceController.isAppKey("school-app-key-1", "school-app-key-1"))
        #expect(!DeviceController.isAppKey("school-app-key-2", "school-app-key-1"))
        #expect(!DeviceController.isAppKey("school-app-key", "school-app-key-1"))
        #expect(
            !DeviceController.isAppKey("", "school-app-key-1") && !DeviceController.isAppKey(nil, "school-app-key-1"))
        try await FakeFCM.with { fake in
            let devices = DeviceConfiguration(registrationKey: "school-app-key-1", registrationsPerMinute: 100_000)
            try await Self.with(fake, devices: devices) { hub in
                var statuses: [HTTPResponse.Status] = []
                for key in [nil, "school-app-key-2", "school-app-key-1-and-more", "school-app-key-1"] {
                    statuses.append(try await Self.register(on: hub, appKey: key))
                }
                #expect(statuses == [.unauthorized, .unauthorized, .unauthorized, .created])
            }
        }
    }

    /// The status of a registration that sends `appKey` in `X-App-Key`.
    static func register(on hub: HubHarness, appKey: String?) async throws -> HTTPResponse.Status {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let appKey { headers[.appKey] = appKey }
        return try await hub.client.execute(
            uri: "/device", method: .post, headers: headers,
            body: ByteBuffer(string: #"{"registration": "keyed", "platform": "ios"}"#)
        ).status
    }

    @Test func deletingASubjectOrADeviceLeavesNoSubscriptionBehind() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                var phones: [Phone] = []
                for index in 0..<3 { phones.append(try await hub.register("phone-\(index)")) }
                try await eventually { fake.subscribers(of: Self.recommended).count == 3 }
                let path = "/subject/\(Legacy.channelID.hex)/\(Legacy.sportsID.hex)/\(Legacy.fixturesID.hex)"
                #expect(try await hub.request(.delete, path, as: .admin).status == .noContent)
                try await eventually { fake.subscribers(of: Self.recommended).isEmpty }
                #expect(try await hub.subscriptions(phones[0]).count == 1)

                #expect(
                    try await hub.request(.delete, "/device/\(phones[1].deviceID)", as: .token(phones[1].secret)).status
                        == .noContent)
                try await eventually { fake.subscriptions(of: "phone-1").isEmpty }
                #expect(fake.subscribers(of: Self.forced) == ["phone-0", "phone-2"])
                try await eventually {
                    try await hub.database.collection(CollectionName.subscriptions).countDocuments([
                        "registration": "phone-1"
                    ]) == 0
                }

                // An admin removes a lost phone without its secret; a communicator may not; an unknown id is 404.
                let lost = "/device/\(phones[2].deviceID)"
                #expect(try await hub.request(.delete, lost, as: .communicator).status == .forbidden)
                #expect(try await hub.request(.delete, lost).status == .unauthorized)
                let unknown = try await hub.request(.delete, "/device/\(ObjectID().hex)", as: .admin)
                #expect(unknown.status == .notFound && unknown.errorCode == "device_not_found")
                #expect(try await hub.request(.delete, "/device/not-an-id", as: .admin).status == .badRequest)
                #expect(try await hub.request(.delete, lost, as: .admin).status == .noContent)
                try await eventually { fake.subscriptions(of: "phone-2").isEmpty }
                #expect(try await hub.request(.get, lost, as: .token(phones[2].secret)).status == .unauthorized)
                let entries = try await AuditTests.entries(hub.database).filter { $0["action"] == "device.delete" }
                #expect(entries.count == 1)  // the device that left by itself is not an admin's deletion
                #expect(entries.first?["actor"] == ["kind": "token", "name": "admin-script"])
                #expect(entries.first?["target"] == ["kind": "device", "id": .string(phones[2].deviceID)])
                #expect(entries.first?.extendedJSON(.relaxed).contains("phone-2") == false)  // never the registration
            }
        }
    }

    @Test func aNewForcedSubjectReachesAThousandRegisteredDevices() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                // Registered as POST /device registers them (the hub's own DAO), without a thousand requests.
                let devices = DeviceDAO(database: hub.database)
                for index in 0..<1_000 {
                    _ = try await devices.register(
                        registration: "many-\(index)", platform: index % 2 == 0 ? .ios : .android,
                        locale: nil, appVersion: nil, secretHash: "x")
                }
                let added = try await hub.request(
                    .post, "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", as: .admin,
                    json: #"{"name": "Fire drill", "desc": "", "opt": {"level": "Forced", "distribution": "Alert"}}"#)
                #expect(added.status == .created)
                let topic = try #require(try added.json()["topic_key"]?.stringValue)
                try await eventually(within: .seconds(30)) { fake.subscribers(of: topic).count == 1_000 }
                let audience = try await hub.request(.get, "/audience?topic_key=\(topic)", as: .communicator).json()
                #expect(audience["devices"]?.int64Value == 1_000)
                try await eventually {
                    try await hub.request(.get, "/audience?topic_key=\(topic)", as: .communicator).json()[
                        path: "platforms.ios.applied"]?
                        .int64Value == 500
                }
                #expect(try await hub.request(.get, "/audience?topic_key=\(topic)").status == .unauthorized)
            }
        }
    }

    @Test func withFCMAnswering429ForAMinuteNothingIsLostAndTheCapIsNeverExceeded() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(
                fake, devices: DeviceConfiguration(registrationsPerMinute: 100_000, subscriptionRate: 20)
            ) { hub in
                let outage = Duration.seconds(60), retryAfter = Duration.seconds(10)
                let outageEnds = ContinuousClock.now + outage
                fake.failSubscriptionCalls(for: outage, status: 429, retryAfter: "\(retryAfter.components.seconds)")
                for index in 0..<30 { _ = try await hub.register("capped-\(index)") }

                // The whole project waits out each Retry-After, then one call probes: a few calls in all, not a
                // retry per subscription.
                try await Task.sleep(until: outageEnds - .seconds(1), clock: .continuous)
                #expect(fake.subscribers(of: Self.forced).isEmpty && fake.subscribers(of: Self.recommended).isEmpty)
                let callsDuringOutage = fake.subscriptionCallCount
                #expect(
                    callsDuringOutage <= 20 + 8,
                    "one window's calls, then a probe per Retry-After: \(callsDuringOutage)")

                // Once it is over, every subscription lands within a Retry-After and a few seconds, and is on record.
                try await eventually(within: retryAfter + .seconds(15)) {
                    fake.subscribers(of: Self.forced).count == 30 && fake.subscribers(of: Self.recommended).count == 30
                }
                try await eventually { try await SubscriptionDAO(database: hub.database).backlog().count == 0 }
                let perSecond = fake.subscriptionCallsPerSecond
                #expect(perSecond.values.max() ?? 0 <= 20, "\(perSecond.sorted { $0.key < $1.key })")
                // And in any sliding second: the calls are spaced (900 ms of them a second: 23 at most), never two
                // seconds' allowances meeting at their edge.
                #expect(fake.mostSubscriptionCallsInAnySecond <= 23, "\(fake.mostSubscriptionCallsInAnySecond)")
                #expect(fake.subscriptionCallCount >= callsDuringOutage + 60)
            }
        }
    }

    @Test func thePortalAndTheMetricsShowHowManyDevicesASubjectReaches() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: PortalTests.seed, relay: try RelayOutboxTests.relay(to: fake),
                devices: DeviceConfiguration(registrationsPerMinute: 100_000)
            ) { hub in
                for index in 0..<3 { _ = try await hub.register("counted-\(index)") }
                var root = PortalBrowser(hub: hub)
                _ = try await root.login("root", PortalTests.adminPassword)
                let send = try await root.get(
                    "/portal/send?channel=\(Legacy.channelID.hex)&area=\(Legacy.libraryID.hex)"
                        + "&subject=\(Legacy.hoursID.hex)")
                #expect(send.text.contains("Reaches <strong id=\"info-reach\">3 registered devices</strong>"))
                #expect(send.text.contains("data-reach=\"0 registered devices\""))  // the optional subject
                let subjects = try await root.get(
                    "/portal/admin/channels/\(Legacy.channelID.hex)/areas/\(Legacy.libraryID.hex)/subjects")
                #expect(subjects.text.contains("3 registered devices"))
                try await eventually { fake.subscribers(of: Self.forced).count == 3 }
                let metrics = try await hub.request(.get, "/metrics").text
                #expect(metrics.contains(#"msi_devices{platform="android"} 3"#))
                #expect(metrics.contains("msi_subscriptions_pending") && metrics.contains("msi_subscription_rollouts "))
                #expect(
                    metrics.contains(#"msi_subscription_operations_total{operation="subscribe",outcome="applied"}"#))
                // The registration tokens appear nowhere.
                #expect(
                    !metrics.contains("counted-") && !send.text.contains("counted-")
                        && !subjects.text.contains("counted-"))
            }
        }
    }

    @Test func aRegistrationFCMCallsGoneMarksItsDeviceUnregistered() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                fake.markUnregistered("gone-token")
                let phone = try await hub.register("gone-token")
                try await eventually {
                    try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret)).json()["state"]
                        == "unregistered"
                }
                // It no longer counts in an audience once its subscriptions sleep (just after the device is marked).
                try await eventually {
                    try await hub.request(.get, "/audience?topic_key=\(Self.forced)", as: .admin).json()["devices"]?
                        .int64Value == 0
                }
            }
        }
    }

    @Test func aHubKilledMidReconcileLeavesNothingHalfAppliedOnceAnotherHasRun() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                try await HubHarness.legacy(database)
                // Sixty phones registered as the service registers them: each wants the Forced and Recommended topics.
                _ = try await Self.registerWanting(60, prefix: "killed", in: database)
                let account = try fake.makeServiceAccount()
                let environment = [
                    "GOOGLE_APPLICATION_CREDENTIALS": account.path, "FCM_ENDPOINT": fake.baseURL,
                    "RELAY_LEASE_SECONDS": "2",
                ]
                fake.setResponseDelay(.milliseconds(150))
                let subscriptions = database.collection(CollectionName.subscriptions)
                let first = try await HubProcess(mongoURI: try HubProcess.uri(of: database), environment: environment)
                try await eventually(within: .seconds(30)) {
                    try await subscriptions.countDocuments(["applied": true]) >= 5
                }
                await first.kill()
                #expect(try await subscriptions.countDocuments(["pending": true]) > 0)

                fake.setResponseDelay(nil)
                let second = try await HubProcess(mongoURI: try HubProcess.uri(of: database), environment: environment)
                defer { second.stop() }
                try await eventually(within: .seconds(30)) {
                    try await subscriptions.countDocuments(["pending": true]) == 0
                }
                // What the database says FCM has is what FCM has: every phone on both topics, nothing more.
                #expect(try await subscriptions.countDocuments(["applied": true]) == 120)
                #expect(
                    fake.subscribers(of: Self.forced).count == 60 && fake.subscribers(of: Self.recommended).count == 60)
                for index in 0..<60 {
                    #expect(fake.subscriptions(of: "killed-\(index)") == [Self.forced, Self.recommended])
                }
            }
        }
    }

    @Test func twoReconcilersOfOneProjectNeverApplyASubscriptionTwice() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                _ = try await Self.registerWanting(100, prefix: "pair", in: database)
                let wishes = SubscriptionDAO(database: database)
                fake.setResponseDelay(.milliseconds(5))
                try await Self.withFCM(fake) { fcm in
                    let reconcilers = (0..<2).map { _ in
                        Self.reconciler(
                            database, fcm: fcm,
                            configuration: .init(batchLimit: 64, lease: .seconds(2), repairInterval: nil))
                    }
                    let running = reconcilers.map { reconciler in Task { await reconciler.run() } }
                    try await eventually(within: .seconds(30)) { try await wishes.backlog().count == 0 }
                    running.forEach { $0.cancel() }
                    for task in running { await task.value }
                }
                // Each of the 200 created once: a second reconciler applying at the same time would have made
                // calls FCM answers 409 (counted, but calls all the same).
                #expect(fake.subscriptionCallCount == 200)
                #expect(
                    fake.subscribers(of: Self.forced).count == 100
                        && fake.subscribers(of: Self.recommended).count == 100)
            }
        }
    }

    /// Runs `body` with an FCM client of `fake`, signed in with a service account of its own.
    static func withFCM(_ fake: FakeFCM, _ body: (FCMClient) async throws -> Void) async throws {
        let account = try fake.makeServiceAccount()
        try await withHTTPClient { http in
            try await body(
                FCMClient(
                    account: try ServiceAccount(contentsOfFile: account.path), httpClient: http,
                    configuration: FCMClient.Configuration(endpoint: fake.baseURL, mode: .send)))
        }
    }

    /// A reconciler of the project "test" on `database`, with no cube (no repair pass to run).
    static func reconciler(
        _ database: MongoDatabase, fcm: FCMClient, signal: WakeSignal = WakeSignal(),
        configuration: SubscriptionReconciler.Configuration
    ) -> SubscriptionReconciler {
        SubscriptionReconciler(
            subscriptions: SubscriptionDAO(database: database), devices: DeviceDAO(database: database),
            rollouts: RolloutDAO(database: database),
            rates: RateWindowDAO(database: database), leases: LeaseDAO(database: database), fcm: fcm.topicSubscriptions,
            project: "test", signal: signal, wishes: { ([], []) }, configuration: configuration,
            logger: Logger(label: "test"))
    }

    /// Registers `count` devices named `prefix-0`… wanting the Forced and Recommended topics, as the service does.
    static func registerWanting(_ count: Int, prefix: String, in database: MongoDatabase) async throws -> [Device] {
        let devices = DeviceDAO(database: database), wishes = SubscriptionDAO(database: database)
        var registered: [Device] = []
        for index in 0..<count {
            let (device, _) = try await devices.register(
                registration: "\(prefix)-\(index)", platform: .ios,
                locale: nil, appVersion: nil, secretHash: "x")
            try await wishes.wantNew([Self.forced, Self.recommended], for: device)
            registered.append(device)
        }
        return registered
    }

    @Test func aWishMadeWhileRecordsWaitIsCalledWithoutWaitingForThem() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                _ = try await Self.registerWanting(10, prefix: "early", in: database)
                let wishes = SubscriptionDAO(database: database), signal = WakeSignal()
                try await Self.withFCM(fake) { fcm in
                    let reconciler = Self.reconciler(
                        database, fcm: fcm, signal: signal,
                        configuration: .init(recordWindow: .seconds(8), repairInterval: nil))
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptionCallCount == 20)
                    // All that is due waits for its record: the next batch waits for the records, or for new work.
                    let waiting = Task { _ = try await reconciler.applyOnce() }
                    try await Task.sleep(for: .milliseconds(300))
                    _ = try await Self.registerWanting(1, prefix: "late", in: database)
                    signal.notify()
                    try await waiting.value
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptions(of: "late-0") == [Self.forced, Self.recommended])
                    #expect(try await wishes.backlog().count == 22, "called before the earlier records were written")
                    try await eventually(within: .seconds(30)) { try await wishes.backlog().count == 0 }
                }
                #expect(fake.subscriptionCallCount == 22)
            }
        }
    }

    @Test func callsRunAheadOfTheirRecordsWithoutCallingTwiceOrLosingAWishChangedMeanwhile() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                let phones = try await Self.registerWanting(20, prefix: "ahead", in: database)
                let wishes = SubscriptionDAO(database: database)
                try await Self.withFCM(fake) { fcm in
                    // Records wait three seconds for company: long enough to act while they wait.
                    let reconciler = Self.reconciler(
                        database, fcm: fcm,
                        configuration: .init(
                            recordWindow: .seconds(3),
                            repairInterval: nil))
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptionCallCount == 40)
                    #expect(try await wishes.backlog().count == 40, "called, not yet recorded: still pending")
                    // A phone leaves the Recommended topic while its record waits (the database still thinks FCM
                    // lacks it, so the wish is stored as settled).
                    try await wishes.set(want: false, topics: [Self.recommended], for: phones[0])
                    // Read again before the records are written: nothing is called twice.
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptionCallCount == 40)
                    // Once written, the record makes the changed wish pending, and the next batch unsubscribes.
                    try await eventually {
                        try await reconciler.applyOnce()
                        return try await wishes.backlog().count == 0
                    }
                }
                #expect(fake.subscriptionCallCount == 41)
                #expect(fake.subscriptions(of: "ahead-0") == [Self.forced])
                for index in 1..<20 {
                    #expect(fake.subscriptions(of: "ahead-\(index)") == [Self.forced, Self.recommended])
                }
                let first = try await wishes.all(of: phones[0]).sorted { $0.topic < $1.topic }
                #expect(first.map(\.applied) == first.map(\.want), "the database says what FCM has")
                #expect(try await wishes.all(of: phones[1]).allSatisfy { $0.applied && $0.want })
            }
        }
    }

    @Test func theCallsWaitForTheDatabaseOnceTooManyRecordsAreHeld() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                _ = try await Self.registerWanting(150, prefix: "held", in: database)
                let wishes = SubscriptionDAO(database: database)
                try await Self.withFCM(fake) { fcm in
                    // At most 10 records held, each waiting 3 s for company: the first slice's calls (up to 256, fewer
                    // when its rate window runs out first) fill that, so the rest wait until their records are written.
                    let reconciler = Self.reconciler(
                        database, fcm: fcm,
                        configuration: .init(unrecordedLimit: 10, recordWindow: .seconds(3), repairInterval: nil))
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptionCallCount == 300)
                    // Without the wait all 300 records would still be held; with it, at most the last slice's.
                    #expect(
                        try await wishes.backlog().count <= 256,
                        "a slice's records were written before the next slice went out")
                    try await eventually(within: .seconds(30)) { try await wishes.backlog().count == 0 }
                }
            }
        }
    }

    @Test func driftMadeAtTheFakeIsRepairedByTheNextPassAndAnAppsOwnTopicsStay() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake) { hub in
                _ = try await hub.register("drifting")
                try await eventually { fake.subscriptions(of: "drifting").count == 2 }
                let stray = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9eff-5a0b1c2d3e4f5a6b7c8d9eff"
                fake.forceUnsubscribe("drifting", from: Self.forced)
                fake.forceSubscribe("drifting", to: stray)
                fake.forceSubscribe("drifting", to: "school-news")
                // Another process's pass, as a periodic one would run.
                try await Self.withFCM(fake) { fcm in
                    let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database)
                    let reconciler = SubscriptionReconciler(
                        subscriptions: SubscriptionDAO(database: hub.database),
                        devices: DeviceDAO(database: hub.database),
                        rollouts: RolloutDAO(database: hub.database),
                        rates: RateWindowDAO(database: hub.database), leases: LeaseDAO(database: hub.database),
                        fcm: fcm.topicSubscriptions, project: "test",
                        signal: services.devices.reconcilerSignal,
                        wishes: { try await services.devices.topicsByLevel() },
                        configuration: .init(repairInterval: nil), logger: Logger(label: "test"))
                    try await reconciler.repairAll()
                    for _ in 0..<20 { try await reconciler.applyOnce() }
                }
                try await eventually {
                    fake.subscriptions(of: "drifting") == [Self.forced, Self.recommended, "school-news"]
                }
            }
        }
    }
}

/// A phone registered through POST /device.
struct Phone: Sendable {
    var status: HTTPResponse.Status
    var deviceID: String
    var secret: String
    var topics: [String]
    var text: String
}

extension HubHarness {
    /// Registers `registration` as an Android phone, proving with `secret` that it is the device registered with it.
    func register(_ registration: String, secret: String? = nil) async throws -> Phone {
        let response = try await request(
            .post, "/device", as: secret.map(Caller.token) ?? .anonymous,
            json: #"{"registration": "\#(registration)", "platform": "android"}"#)
        let body = try response.json()
        return Phone(
            status: response.status, deviceID: body["device_id"]?.stringValue ?? "",
            secret: body["device_secret"]?.stringValue ?? "",
            topics: body["subscriptions"]?.arrayValue?.compactMap { $0.documentValue?["topic_key"]?.stringValue } ?? [],
            text: response.text)
    }

    /// The phone's subscriptions as GET /device/:id/subscriptions lists them.
    func subscriptions(_ phone: Phone) async throws -> [BSONDocument] {
        try await request(.get, "/device/\(phone.deviceID)/subscriptions", as: .token(phone.secret)).json()[
            "subscriptions"]?
            .arrayValue?.compactMap(\.documentValue) ?? []
    }
}

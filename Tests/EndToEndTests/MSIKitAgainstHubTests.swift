import DAO
import FakeFCM
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import MSIKit
import Mongo
import MongoTestSupport
import Synchronization
import Testing

/// MSIKit against a real hub and the fake FCM, over HTTP, with no stand-in for either: the design's modules as a
/// phone lives them.
@Suite("MSIKit against a real hub", .tags(.faults))
struct MSIKitAgainstHubTests {
    @Test func registeringGivesTheForcedAndRecommendedSubjectsAndFCMAppliesThem() async throws {
        try await LiveHub.with { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "reg-1")
            try await phone.start()
            let state = try await phone.client.registrationState()
            guard case .initialised(let deviceID) = state else {
                Issue.record("not initialised: \(state)")
                return
            }
            let subscriptions = try await phone.client.subscriptions()
            #expect(Set(subscriptions.map(\.topicKey)) == SchoolCube.automatic)
            let closures = try #require(subscriptions.first { $0.topicKey == SchoolCube.closures.topicKey })
            #expect(closures.level == .forced && closures.subjectName == "Closures" && closures.areaName == "Campus")
            try await hub.waitUntilApplied("reg-1", SchoolCube.automatic)
            try await eventually("the hub reports them applied") {
                try await phone.client.subscriptions().allSatisfy(\.applied)
            }
            #expect(try await phone.client.checkIfSubscribed(SchoolCube.exams.topicKey))
            let chess = try await phone.client.subscriptionInfo(SchoolCube.chess.topicKey)
            #expect(chess.subjectName == "Chess" && chess.level == .optIn && !chess.subscribed && chess.isKnown)

            // Starting again registers nothing new: the same device, still initialised.
            try await phone.start()
            #expect(try await phone.client.registrationState() == .initialised(deviceID: deviceID))
        }
    }

    @Test func subscribingAndUnsubscribingGoThroughTheHubToFCM() async throws {
        try await LiveHub.with { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "sub-1")
            try await phone.start()
            let chess = try await phone.client.subscribe(SchoolCube.chess.topicKey)
            #expect(chess.subjectName == "Chess")
            try await phone.client.unsubscribe(SchoolCube.events.topicKey)
            let forced = await #expect(throws: MSIKitError.self) {
                try await phone.client.unsubscribe(SchoolCube.closures.topicKey)
            }
            #expect(forced?.code == .forcedSubscription)
            let unknown = await #expect(throws: MSIKitError.self) {
                try await phone.client.subscribe(SchoolCube.unknownTopic)
            }
            #expect(unknown?.code == .topicNotFound)
            let expected: Set = [SchoolCube.closures.topicKey, SchoolCube.exams.topicKey, SchoolCube.chess.topicKey]
            #expect(Set(try await phone.client.subscriptions().map(\.topicKey)) == expected)
            #expect(try await !phone.client.checkIfSubscribed(SchoolCube.events.topicKey))
            try await hub.waitUntilApplied("sub-1", expected)
        }
    }

    @Test func aRotatedTokenMovesTheSubscriptionsAndPushesFollowIt() async throws {
        try await LiveHub.with { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "old-token")
            try await phone.start()
            try await hub.waitUntilApplied("old-token", SchoolCube.automatic)
            phone.listen()
            defer { phone.stop() }
            phone.push.rotate(to: "new-token")
            try await hub.waitUntilApplied("new-token", SchoolCube.automatic)
            // The old token's subscriptions are removed too (their own calls to FCM, maybe a moment later).
            try await hub.waitUntilApplied("old-token", [])
            let key = try await hub.send(SchoolCube.events, title: "Fair")
            try await eventually("the push reaches the new token") { phone.shownKeys == [key] }
            #expect(phone.listenerErrors.isEmpty)
        }
    }

    @Test func aPushedMessageIsStoredOnceAndAnAlertShownOnce() async throws {
        try await LiveHub.with { hub in
            let phone = try await hub.listeningPhone("push-1")
            defer { phone.stop() }
            let alert = try await hub.send(SchoolCube.closures, title: "Snow day")
            let information = try await hub.send(SchoolCube.events, title: "Fair")
            try await hub.waitUntilRelayed()
            try await eventually("both messages shown") { phone.shownKeys.count >= 2 }
            // The Alert came twice (notification and data components), the Information once: two arrivals shown.
            try await Task.sleep(for: .milliseconds(300))
            #expect(phone.shownKeys.sorted() == [alert, information].sorted())
            let shownAlert = try #require(phone.shownMessages.first { $0.message.msiKey == alert })
            #expect(shownAlert == .alert(title: "Snow day", body: "Snow day (summary)", message: shownAlert.message))
            #expect(
                phone.shownMessages.contains(
                    .information(
                        try #require(
                            phone.shownMessages.first {
                                $0.message.msiKey == information
                            }
                        ).message)))
            #expect(try await phone.storedKeys() == [alert, information])
            // A catch-up brings both again from the hub; neither is stored or shown twice.
            try await phone.catchUp()
            #expect(phone.shownKeys.count == 2)
            #expect(phone.listenerErrors.isEmpty)
        }
    }

    @Test func aTruncatedPayloadIsCompletedFromTheHub() async throws {
        try await LiveHub.with { hub in
            let phone = try await hub.listeningPhone("long-1")
            defer { phone.stop() }
            // 1,350 characters (within POST /message's 1,500) but 4,050 bytes: over FCM's 2,048.
            let text = String(repeating: "📚📖 ", count: 450)
            let key = try await hub.send(SchoolCube.events, title: "Timetable", text: text)
            try await eventually("the message is shown") { phone.shownKeys == [key] }
            let sent = try #require(hub.fake.received.first { $0.data["msi_key"] == key })
            #expect(sent.data["truncated"] == "true" && (sent.data["message"]?.count ?? 0) < text.count)
            let stored = try #require(try await phone.client.store.messages().first)
            #expect(stored.text == text && stored.title == "Timetable")
        }
    }

    @Test func aPhoneThatWasOffCatchesUpOnItsNextStartWithoutExpiredMessages() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "msikit-offline-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LiveHub.with { hub in
            let before = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "off-1", directory: directory)
            try await before.start()
            try await hub.waitUntilApplied("off-1", SchoolCube.automatic)
            let first = try await hub.send(SchoolCube.exams, title: "Exam rooms")
            try await hub.waitUntilRelayed()
            _ = try await before.client.receive(payload: try #require(hub.fake.drainInbox("off-1").last?.data))
            #expect(try await before.storedKeys() == [first])

            // The phone is off: what FCM queued is lost; the hub keeps the archive.
            var missed: [String] = []
            missed.append(try await hub.send(SchoolCube.closures, title: "Heating off"))
            _ = try await hub.send(SchoolCube.events, title: "Flash sale", ttl: 0)
            missed.append(try await hub.send(SchoolCube.events, title: "Concert", ttl: 3600))
            _ = try await hub.send(SchoolCube.chess, title: "Chess final")
            missed.append(try await hub.send(SchoolCube.exams, title: "Results"))
            try await hub.waitUntilRelayed()
            _ = before.push.loseQueuedPushes()

            // The app starts again from its folder: the same device, the messages it missed, oldest first.
            let after = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "off-1", directory: directory)
            try await after.start()
            #expect(after.shownKeys == missed)
            #expect(try await after.storedKeys() == Set(missed + [first]))
            #expect(try await after.client.registrationState() == before.client.registrationState())
        }
    }

    @Test func aFirstStartWithoutTheHubResumesWhenTheHubIsBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "msikit-resume-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try LoopbackPort.free()
        try await FakeFCM.with { fake in
            let url = URL(string: "http://127.0.0.1:\(port)")!
            let phone = try SimulatedPhone(hub: url, fake: fake, token: "late-1", directory: directory)
            let offline = await #expect(throws: MSIKitError.self) { try await phone.start() }
            #expect(offline?.code == .network)
            #expect(try await phone.client.registrationState() == .notRegistered)
            try await LiveHub.with(fake: fake, port: port) { hub in
                let key = try await hub.send(SchoolCube.closures, title: "Welcome week")
                try await phone.start()
                guard case .initialised = try await phone.client.registrationState() else {
                    Issue.record("not initialised")
                    return
                }
                #expect(phone.shownKeys == [key])
                try await hub.waitUntilApplied("late-1", SchoolCube.automatic)
            }
        }
    }
}

extension MSIKitAgainstHubTests {
    @Test func aStartCutOffAfterRegisteringFinishesOnTheNextStartWithTheSameDevice() async throws {
        try await LiveHub.with { hub in
            try await FlakyGateway.with(to: hub.url) { gateway in
                // The network fails just after POST /device answered: the initial subscriptions cannot be read.
                gateway.fail { method, path in method == .get && path.hasSuffix("/subscriptions") }
                let phone = try SimulatedPhone(hub: gateway.url, fake: hub.fake, token: "cut-1")
                let cut = await #expect(throws: MSIKitError.self) { try await phone.start() }
                #expect(cut?.code.hubStatus == 502)
                guard case .registered(let deviceID) = try await phone.client.registrationState() else {
                    Issue.record("the registration was not saved")
                    return
                }
                gateway.fail { _, _ in false }
                try await phone.start()
                #expect(try await phone.client.registrationState() == .initialised(deviceID: deviceID))
                #expect(gateway.forwarded.filter { $0 == "POST /device" }.count == 1)
                #expect(Set(try await phone.client.subscriptions().map(\.topicKey)) == SchoolCube.automatic)
            }
        }
    }
}

extension MSIKitAgainstHubTests {
    @Test func aPhoneWhoseTokenSomeoneElseRegisteredGoesOnWithANewDeviceAndItsSubscriptions() async throws {
        try await LiveHub.with { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "stolen-1")
            try await phone.start()
            _ = try await phone.client.subscribe(SchoolCube.chess.topicKey)
            guard case .initialised(let first) = try await phone.client.registrationState() else {
                Issue.record("not initialised")
                return
            }
            // Someone who learnt the token registers it: a device of their own, never the phone's.
            let stranger = try await Self.registerDevice("stolen-1", at: hub.url)
            #expect(stranger.status == 201 && stranger.deviceID != first)

            // The phone's next call meets a 401: it registers again (the refused secret proves nothing), gets a new
            // device, which the stranger's loses to, and goes on with the token's subscriptions.
            let subscriptions = Set(try await phone.client.subscriptions().map(\.topicKey))
            #expect(subscriptions == SchoolCube.automatic.union([SchoolCube.chess.topicKey]))
            guard case .registered(let second) = try await phone.client.registrationState() else {
                Issue.record("the new device was not saved")
                return
            }
            #expect(second != first && second != stranger.deviceID)
            #expect(try await Self.deviceStatus(stranger.deviceID, secret: stranger.secret, at: hub.url) == 401)
            try await phone.start()
            #expect(try await phone.client.registrationState() == .initialised(deviceID: second))
            #expect(try await hub.database.collection(CollectionName.devices).countDocuments() == 1)
        }
    }

    @Test func aRefusalTheHubDidNotMakeGivesTheSameDeviceBackForItsSecret() async throws {
        try await LiveHub.with { hub in
            try await FlakyGateway.with(to: hub.url) { gateway in
                let phone = try SimulatedPhone(hub: gateway.url, fake: hub.fake, token: "proven-1")
                try await phone.start()
                guard case .initialised(let deviceID) = try await phone.client.registrationState() else {
                    Issue.record("not initialised")
                    return
                }
                // Something between the phone and the hub answers 401 once: the phone registers again with its
                // secret, which the hub still takes: the same device, initialised as it was.
                let refusals = Mutex(1)
                gateway.fail(with: .unauthorized, body: #"{"error": {"code": "unauthenticated", "message": "no"}}"#) {
                    method, path in
                    method == .get && path.hasSuffix("/subscriptions")
                        && refusals.withLock { left in
                            defer { left -= 1 }; return left > 0
                        }
                }
                #expect(Set(try await phone.client.subscriptions().map(\.topicKey)) == SchoolCube.automatic)
                #expect(try await phone.client.registrationState() == .initialised(deviceID: deviceID))
                #expect(gateway.forwarded.filter { $0 == "POST /device" }.count == 2)
                #expect(try await hub.database.collection(CollectionName.devices).countDocuments() == 1)
            }
        }
    }

    /// `POST /device` for `token` without any secret, as someone other than the phone would.
    static func registerDevice(_ token: String, at hub: URL) async throws -> (
        status: Int, deviceID: String, secret: String
    ) {
        var request = URLRequest(url: hub.appendingPathComponent("device"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"registration": "\#(token)", "platform": "ios"}"#.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let answer = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return (
            (response as? HTTPURLResponse)?.statusCode ?? 0, answer["device_id"] as? String ?? "",
            answer["device_secret"] as? String ?? ""
        )
    }

    /// The status of `GET /device/:id` with `secret`.
    static func deviceStatus(_ deviceID: String, secret: String, at hub: URL) async throws -> Int {
        var request = URLRequest(url: hub.appendingPathComponent("device/\(deviceID)"))
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}

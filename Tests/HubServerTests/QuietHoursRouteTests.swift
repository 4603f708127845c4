import DAO
import FakeFCM
import FCM
import Foundation
import HTTPTypes
import HubServer
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Synchronization
import Testing

/// The clock the relay reads quiet hours by, moved by the test past a window instead of waiting for it.
final class QuietTestClock: Sendable {
    private let offset = Mutex<Int64>(0)

    /// Now, moved on by what `advance` added.
    var now: @Sendable () -> Int64 { { UnixTime.nowMilliseconds() + self.offset.withLock { $0 } } }

    /// Moves the clock on by `duration`.
    func advance(by duration: Duration) { offset.withLock { $0 += duration.milliseconds } }
}

/// Urgency and quiet hours end to end: a message's urgency at the fake FCM, `quiet_hours` on PUT /device, and a
/// quiet device that gets an active message (topic or group) once its window ended and a critical one at once.
@Suite("Urgency and quiet hours through the routes", .tags(.faults))
struct QuietHoursRouteTests {
    /// A window of an hour either side of now on `tz`'s wall clock: quiet now, over two hours from now.
    static func windowAroundNow(tz: String = "Asia/Tokyo") -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: tz)!
        func text(_ date: Date) -> String {
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        }
        let now = Date()
        return #"{"from": "\#(text(now - 3600))", "to": "\#(text(now + 3600))", "tz": "\#(tz)"}"#
    }

    /// The legacy channel with its "Opening hours" Alerts Recommended rather than Forced: a Forced subject's Alerts
    /// go through quiet hours (`PreferencePolicy`), a Recommended subject's wait.
    static let recommendedHours: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        _ = try await SubjectDAO(database: database).update(
            channelID: Legacy.channelID, areaID: Legacy.libraryID, subjectID: Legacy.hoursID,
            SubjectDraft(name: "Opening hours", desc: "", level: .recommended, distribution: .alert))
    }

    /// A hub seeded with the legacy channel (its hours subject Recommended), relaying to `fake`, with quiet hours
    /// read on `clock`.
    static func with(
        _ fake: FakeFCM, clock: QuietTestClock,
        seed: @escaping @Sendable (MongoDatabase) async throws -> Void = recommendedHours,
        _ body: @Sendable (HubHarness) async throws -> Void
    ) async throws {
        let relay = try RelayOutboxTests.relay(to: fake) { $0.quietHoursClock = clock.now }
        try await HubHarness.with(
            seed: seed, relay: relay,
            devices: DeviceConfiguration(registrationsPerMinute: 100_000), body)
    }

    @Test(arguments: [
        ("passive", "passive", "NORMAL", "msi_passive", "5"),
        ("time-sensitive", "time-sensitive", "HIGH", "msi_time_sensitive", "10"),
        // Without APNS_CRITICAL_ALERTS a critical message reaches APNs as time-sensitive.
        ("critical", "time-sensitive", "HIGH", "msi_critical", "10"),
    ])
    func aStoredMessagesUrgencyReachesAPNsAndAndroid(
        urgency: String, level: String, priority: String,
        channel: String, apnsPriority: String
    ) async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake, clock: QuietTestClock()) { hub in
                let key = try await hub.post(RelayOutboxTests.alert(extra: #", "urgency": "\#(urgency)""#))
                try await eventually { fake.received.contains { $0.data["msi_key"] == key.hex } }
                let notification = try #require(
                    fake.received.first {
                        $0.data["msi_key"] == key.hex && $0.message["notification"] != nil
                    })
                let apns = try #require(notification.message["apns"] as? [String: Any])
                let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
                #expect(aps?["interruption-level"] as? String == level)
                #expect((apns["headers"] as? [String: String])?["apns-priority"] == apnsPriority)
                let android = try #require(notification.message["android"] as? [String: Any])
                #expect(android["priority"] as? String == priority)
                #expect((android["notification"] as? [String: Any])?["channel_id"] as? String == channel)
                #expect(notification.data["urgency"] == urgency)
                let stored = try await hub.request(.get, "/message/\(key.hex)").json()
                #expect(stored["urgency"]?.stringValue == urgency)
            }
        }
    }

    static let berlinNights = #"{"from": "22:00", "to": "07:00", "tz": "Europe/Berlin"}"#

    @Test func putDeviceSetsRefusesAndClearsQuietHours() async throws {
        try await FakeFCM.with { fake in
            try await Self.with(fake, clock: QuietTestClock()) { hub in
                let phone = try await hub.register("token-q")
                let path = "/device/\(phone.deviceID)"
                let set = try await hub.request(
                    .put, path, as: .token(phone.secret),
                    json: #"{"quiet_hours": \#(Self.berlinNights)}"#)
                #expect(set.status == .ok)
                var shown = try await hub.request(.get, path, as: .token(phone.secret)).json()
                #expect(shown[path: "quiet_hours.from"]?.stringValue == "22:00")
                #expect(shown[path: "quiet_hours.to"]?.stringValue == "07:00")
                #expect(shown[path: "quiet_hours.tz"]?.stringValue == "Europe/Berlin")

                for bad in [
                    #"{"from": "22:00", "to": "07:00", "tz": "Mars/Olympus"}"#,
                    #"{"from": "25:00", "to": "07:00", "tz": "UTC"}"#, #"{"from": "22:00"}"#, #""22-07""#,
                ] {
                    let refused = try await hub.request(
                        .put, path, as: .token(phone.secret),
                        json: #"{"quiet_hours": \#(bad)}"#)
                    #expect(refused.status == .unprocessableContent, "\(bad)")
                    #expect(refused.errorCode == "invalid_quiet_hours", "\(bad)")
                }
                shown = try await hub.request(.get, path, as: .token(phone.secret)).json()
                #expect(shown[path: "quiet_hours.tz"]?.stringValue == "Europe/Berlin")

                let cleared = try await hub.request(
                    .put, path, as: .token(phone.secret),
                    json: #"{"quiet_hours": null}"#)
                #expect(cleared.status == .ok)
                shown = try await hub.request(.get, path, as: .token(phone.secret)).json()
                #expect(shown["quiet_hours"] == nil || shown["quiet_hours"] == .null)
            }
        }
    }

    /// What the phones received from the fake so far, drained from their inboxes and kept.
    final class Inboxes: Sendable {
        private let kept = Mutex<[String: [FakeFCMDelivery]]>([:])
        let fake: FakeFCM

        init(_ fake: FakeFCM) { self.fake = fake }

        /// Everything `phone` received so far.
        func all(at phone: String) -> [FakeFCMDelivery] {
            kept.withLock { kept in
                kept[phone, default: []] += fake.drainInbox(phone)
                return kept[phone, default: []]
            }
        }

        /// The messages of `key` that `phone` received so far.
        func arrived(_ key: ObjectID, at phone: String) -> [FakeFCMDelivery] {
            kept.withLock { kept in
                kept[phone, default: []] += fake.drainInbox(phone)
                return kept[phone, default: []].filter { $0.data["msi_key"] == key.hex }
            }
        }
    }

    @Test func aQuietDeviceGetsAnActiveTopicMessageAfterItsWindowAndACriticalOneAtOnce() async throws {
        try await FakeFCM.with { fake in
            let clock = QuietTestClock()
            try await Self.with(fake, clock: clock) { hub in
                try await hub.waitForRelayRecord()
                let quiet = try await hub.register("quiet-phone", locale: "hi-IN")
                _ = try await hub.register("awake-phone")
                let set = try await hub.request(
                    .put, "/device/\(quiet.deviceID)", as: .token(quiet.secret),
                    json: #"{"quiet_hours": \#(Self.windowAroundNow())}"#)
                #expect(set.status == .ok)
                // FCM knows the device is in its window's quiet topic (what the condition leaves out).
                let subscriptions = hub.database.collection(CollectionName.subscriptions)
                try await eventually {
                    try await subscriptions.countDocuments([
                        "registration": "quiet-phone", "applied": true,
                        "topic": ["$regex": "^quiet-"],
                    ]) == 1
                        && fake.subscriptions(of: "quiet-phone").contains { $0.hasPrefix("quiet-") }
                        && fake.subscriptions(of: "awake-phone").contains(Legacy.hoursTopic)
                        && fake.languageTopics(of: "quiet-phone") == ["lang-hi"]
                }
                let inbox = Inboxes(fake)
                let active = try await hub.post(RelayOutboxTests.alert("Library"))
                let translated = try await hub.post(
                    RelayOutboxTests.alert(
                        "Closed", extra: #", "translations": {"hi": {"title": "बंद", "desc": "d-hi"}}"#))
                let critical = try await hub.post(
                    RelayOutboxTests.alert(
                        "Lockdown",
                        extra: #", "urgency": "critical""#))
                try await eventually { inbox.arrived(active, at: "awake-phone").count == 2 }
                try await eventually { inbox.arrived(critical, at: "quiet-phone").count == 2 }
                // The active message went first, by a condition that left the quiet device out.
                #expect(inbox.arrived(active, at: "quiet-phone").isEmpty)
                #expect(inbox.arrived(active, at: "awake-phone").allSatisfy { $0.condition != nil })
                #expect(
                    inbox.arrived(critical, at: "quiet-phone")
                        .allSatisfy { $0.topic == Legacy.hoursTopic })
                let stored = try await MessageDAO(database: hub.database).get(msiKey: active)
                let deferrals = try await QuietDeferralDAO(database: hub.database).deferrals(of: stored.id)
                #expect(deferrals.map(\.state) == [.pending])

                // A correction while the window lasts leaves the quiet device out as the message did.
                try await MessageCorrectionTests.correct(hub, active.hex, as: .admin, #"{"title": "Library hours"}"#)
                try await eventually {
                    inbox.arrived(active, at: "awake-phone").contains { $0.data["correction"] == "1" }
                }
                let correction = try #require(
                    inbox.arrived(active, at: "awake-phone").first { $0.data["correction"] == "1" })
                #expect(
                    correction.condition?.contains("!('quiet-") == true, "\(String(describing: correction.condition))")
                #expect(inbox.arrived(active, at: "quiet-phone").isEmpty)

                // The window ends: the held-back send goes to the device's token, both components, once, corrected.
                clock.advance(by: .seconds(2 * 3600 + 60))
                try await eventually { inbox.arrived(active, at: "quiet-phone").count == 2 }
                let late = inbox.arrived(active, at: "quiet-phone")
                #expect(late.allSatisfy { $0.topic == nil && $0.condition == nil })
                #expect(late.contains { $0.notification?.title == "Library hours" })
                #expect(!late.contains { $0.data["correction"] == "1" })
                // A translated Alert held back goes to the device in its language: one request, the Hindi pop-up.
                try await eventually { inbox.arrived(translated, at: "quiet-phone").count == 1 }
                #expect(inbox.arrived(translated, at: "quiet-phone").map { $0.notification?.title } == ["बंद"])
                #expect(inbox.arrived(translated, at: "awake-phone").map { $0.notification?.title } == ["Closed"])
                try await eventually {
                    try await QuietDeferralDAO(database: hub.database).deferrals(of: stored.id).map(\.state) == [.sent]
                }
                // The message's two components, and its correction.
                #expect(inbox.arrived(active, at: "awake-phone").count == 3)
            }
        }
    }

    @Test func aQuietGroupMembersDeviceIsDeferredThenSentAndACriticalMessageReachesItAtOnce() async throws {
        try await FakeFCM.with { fake in
            let clock = QuietTestClock()
            let quiet = FanOutTests.Phone("ann-phone", person: "ann")
            let awake = FanOutTests.Phone("bob-phone", person: "bob")
            let now = UnixTime.nowMilliseconds()
            // A window that holds now: from a minute before now to an hour after, on UTC's clock.
            let minute = Int((now / 60_000) % 1440)
            func text(_ minutes: Int) -> String {
                let value = (minutes + 1440) % 1440
                return String(format: "%02d:%02d", value / 60, value % 60)
            }
            let from = text(minute - 1), to = text(minute + 60)
            try await Self.with(
                fake, clock: clock,
                seed: { database in
                    try await FanOutTests.seed([quiet, awake], in: database)
                    try await database.collection(CollectionName.devices).updateOne(
                        ["_id": .objectID(quiet.id)],
                        [
                            "$set": [
                                "quiet_hours": [
                                    "from": .string(from), "to": .string(to), "tz": "UTC",
                                    "topic": "quiet-000000000000",
                                ]
                            ]
                        ])
                    _ = try await GroupDAO(database: database).replace(
                        id: "chess", name: "Chess", access: [],
                        persons: ["ann", "bob"])
                }
            ) { hub in
                let body = PersonMessageTests.body(to: #"{"groups": ["chess"]}"#, distribution: "Alert")
                let posted = try await hub.request(.post, "/message", as: .admin, json: body)
                #expect(posted.status == .created)
                let active = try #require(try posted.json()["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
                let stored = try await MessageDAO(database: hub.database).get(msiKey: active)
                try await FanOutTests.waitUntilSent(stored, in: hub.database)
                // Sent once every device not held back is answered: the quiet one is deferred, not sent.
                var report = try await hub.request(.get, "/message/\(active.hex)/deliveries", as: .admin).json()
                #expect(report[path: "counts.sent"]?.int64Value == 1)
                #expect(report[path: "counts.deferred"]?.int64Value == 1)
                #expect(report[path: "counts.pending"]?.int64Value == 0)
                #expect(FanOutTests.tokens(fake) == ["bob-phone"])

                let urgent = PersonMessageTests.body(
                    to: #"{"groups": ["chess"]}"#, distribution: "Alert",
                    extra: #", "urgency": "critical""#)
                let critical = try #require(
                    try await hub.request(.post, "/message", as: .admin, json: urgent)
                        .json()["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
                try await FanOutTests.waitUntilSent(
                    try await MessageDAO(database: hub.database).get(msiKey: critical),
                    in: hub.database)
                let criticalTokens = fake.received.filter { $0.data["msi_key"] == critical.hex }
                    .compactMap { $0.message["token"] as? String }
                #expect(Set(criticalTokens) == ["ann-phone", "bob-phone"])
                #expect(
                    !fake.received.contains {
                        $0.data["msi_key"] == active.hex
                            && $0.message["token"] as? String == "ann-phone"
                    })

                // The window ends: the deferred device gets the message by token, and its delivery becomes sent.
                clock.advance(by: .seconds(2 * 3600))
                try await eventually {
                    fake.received.contains {
                        $0.data["msi_key"] == active.hex
                            && $0.message["token"] as? String == "ann-phone"
                    }
                }
                try await eventually {
                    let counts = try await hub.request(.get, "/message/\(active.hex)/deliveries", as: .admin).json()
                    return counts[path: "counts.sent"]?.int64Value == 2
                }
                report = try await hub.request(.get, "/message/\(active.hex)/deliveries", as: .admin).json()
                #expect(report[path: "counts.deferred"]?.int64Value == 0)
                let sentToAnn = fake.received.filter {
                    $0.data["msi_key"] == active.hex
                        && $0.message["token"] as? String == "ann-phone"
                }
                #expect(sentToAnn.count == 1)
                #expect(sentToAnn.first?.data["audience"] == "group" && sentToAnn.first?.data["group"] == "chess")
            }
        }
    }
}

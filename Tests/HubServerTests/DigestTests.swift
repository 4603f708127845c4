import DAO
import FakeFCM
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Preferences at work (issue 45): a subject or group in `digest` reaches the person's devices as background data
/// only, catch-up still has it, and one digest at the person's hour holds exactly those messages, once; a critical
/// message and an admin's `override_preferences` arrive at once; only admins may override; a Forced subject's Alert
/// is marked to go through.
@Suite("Preferences: digests and emergencies through the routes", .tags(.faults))
struct DigestTests {
    /// The quiet-hours tests' channel (its hours subject a Recommended Alert) and the class group of student-1 and
    /// student-2.
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await QuietHoursRouteTests.recommendedHours(database)
        _ = try await GroupDAO(database: database).replace(
            id: "class-7b", name: "Class 7B", access: [], persons: ["student-1", "student-2"])
    }

    static func alert(_ title: String, extra: String = "") -> String {
        #"{"title": "\#(title)", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"\#(extra)}"#
    }

    static func toClass(_ title: String, extra: String = "") -> String {
        #"{"title": "\#(title)", "desc": "d", "message": "m", "to": {"groups": ["class-7b"]}, "distribution": "Alert"\#(extra)}"#
    }

    static func send(_ json: String, on hub: HubHarness) async throws -> ObjectID {
        let response = try await hub.request(.post, "/message", as: .admin, json: json)
        #expect(response.status == .created, "\(response.text)")
        return try #require(try response.json()["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
    }

    @Test func aDigestPersonGetsDataOnlyThenOneDigestOfExactlyWhatWasHeldAndEmergenciesAtOnce() async throws {
        try await FakeFCM.with { fake in
            let clock = QuietTestClock()
            let relay = try RelayOutboxTests.relay(to: fake) { $0.digestClock = clock.now }
            try await HubHarness.with(
                seed: Self.seed, relay: relay, devices: DeviceConfiguration(registrationsPerMinute: 100_000),
                persons: try PersonBindingTests.persons()
            ) { hub in
                try await hub.waitForRelayRecord()
                let phone = try await PersonSettingsTests.boundPhone("digest-phone", to: "student-1", on: hub)
                _ = try await PersonSettingsTests.boundPhone("instant-phone", to: "student-2", on: hub)
                let set = try await PersonSettingsTests.put(
                    #"""
                    {"digest_hour": "17:00",
                     "delivery": {"subjects": {"\#(Legacy.hoursTopic)": "digest"}, "groups": {"class-7b": "digest"}}}
                    """#, phone, on: hub)
                #expect(set.status == .ok, "\(set.text)")
                let held = ServerOwnedTopic.held(Legacy.hoursTopic)
                try await eventually {
                    fake.subscriptions(of: "digest-phone").isSuperset(of: [held, Legacy.hoursTopic])
                        && fake.subscriptions(of: "instant-phone").contains(Legacy.hoursTopic)
                }
                #expect(!fake.subscriptions(of: "instant-phone").contains(held))
                let inbox = QuietHoursRouteTests.Inboxes(fake)

                let active = try await Self.send(Self.alert("Library closed"), on: hub)
                let critical = try await Self.send(
                    Self.alert("Fire drill", extra: #", "urgency": "critical""#), on: hub)
                let grouped = try await Self.send(Self.toClass("Homework"), on: hub)
                let overridden = try await Self.send(
                    Self.toClass("Bus cancelled", extra: #", "override_preferences": true"#), on: hub)

                // The other person gets every pop-up; the digest person the data alone, but the emergencies' pop-ups.
                try await eventually {
                    inbox.arrived(active, at: "instant-phone").count == 2
                        && inbox.arrived(active, at: "digest-phone").count == 1
                        && inbox.arrived(critical, at: "digest-phone").count == 2
                        && inbox.arrived(grouped, at: "digest-phone").count == 1
                        && inbox.arrived(overridden, at: "digest-phone").count == 1
                }
                #expect(inbox.arrived(active, at: "digest-phone").allSatisfy { $0.notification == nil })
                #expect(inbox.arrived(active, at: "instant-phone").contains { $0.notification != nil })
                #expect(inbox.arrived(critical, at: "digest-phone").contains { $0.notification != nil })
                let homework = try #require(inbox.arrived(grouped, at: "digest-phone").first)
                #expect(homework.notification == nil && homework.data["muted"] == "1")
                #expect(inbox.arrived(overridden, at: "digest-phone").first?.notification != nil)

                // A correction pops up where the message did, never on the devices that had it in the background.
                try await MessageCorrectionTests.correct(
                    hub, active.hex, as: .admin, #"{"title": "Library closed today"}"#)
                try await eventually {
                    inbox.arrived(active, at: "instant-phone").contains { $0.data["correction"] == "1" }
                }
                #expect(!inbox.arrived(active, at: "digest-phone").contains { $0.data["correction"] == "1" })

                // The school sees it: the audience preview says how many an Alert notifies at once, the reach reports
                // count the held devices apart.
                let preview = try await hub.request(.get, "/audience?topic_key=\(Legacy.hoursTopic)", as: .communicator)
                    .json()
                #expect(
                    preview["devices"]?.int64Value == 2 && preview["instant"]?.int64Value == 1
                        && preview["held"]?.int64Value == 1, "\(preview)")
                try await FanOutTests.waitUntilSent(
                    try await MessageDAO(database: hub.database).get(msiKey: grouped), in: hub.database)
                for (key, held) in [(active, 1), (grouped, 1), (critical, 0), (overridden, 0)] {
                    let report = try await hub.request(.get, "/message/\(key.hex)/receipts", as: .admin).json()
                    #expect(report["held"]?.int64Value == Int64(held), "\(key.hex): \(report)")
                }

                // Catch-up has every message as usual.
                let caughtUp = try await hub.request(
                    .get, "/device/\(phone.deviceID)/messages?since=0", as: .token(phone.secret)
                ).json()
                let keys = Set(
                    (caughtUp["messages"]?.arrayValue ?? []).compactMap { $0.documentValue?["msi_key"]?.stringValue })
                #expect(keys.isSuperset(of: [active.hex, grouped.hex]), "\(keys)")

                // At the digest hour: one push, the two held messages, the count exact.
                let schedule = DigestScheduleDAO(database: hub.database)
                let due = try #require(try await schedule.status(of: "student-1")?.dueAt)
                #expect(try await schedule.status(of: "student-2") == nil)
                clock.advance(by: .milliseconds(due - UnixTime.nowMilliseconds() + 1_000))
                try await eventually { try await schedule.status(of: "student-1")?.last != nil }
                let digests = inbox.all(at: "digest-phone").filter { $0.data["audience"] == "digest" }
                #expect(digests.count == 1)
                let digest = try #require(digests.first)
                #expect(digest.data["count"] == "2" && digest.data["listed"] == "2")
                #expect(
                    digest.notification?.title.hasPrefix("2 new: ") == true,
                    "\(String(describing: digest.notification))")
                let items = try JSONSerialization.jsonObject(with: Data((digest.data["items"] ?? "").utf8))
                let listed = (items as? [[String: Any]] ?? []).compactMap { $0["msi_key"] as? String }
                #expect(listed == [active.hex, grouped.hex])
                #expect(inbox.all(at: "instant-phone").allSatisfy { $0.data["audience"] != "digest" })
                // Once: the next one is tomorrow, and nothing more goes out meanwhile.
                let next = try #require(try await schedule.status(of: "student-1"))
                #expect(next.dueAt >= due + 86_400_000 - 3_600_000 && next.last?.count == 2)
                try await Task.sleep(for: .seconds(6))
                #expect(inbox.all(at: "digest-phone").filter { $0.data["audience"] == "digest" }.count == 1)
            }
        }
    }

    @Test func onlyAdminsOverridePreferencesAndAForcedSubjectsAlertIsMarkedToGoThrough() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let refused = try await hub.request(
                .post, "/message", as: .communicator,
                json: RelayOutboxTests.information(extra: #", "override_preferences": true"#))
            #expect(refused.status == .forbidden && refused.errorCode == "override_forbidden", "\(refused.text)")
            let malformed = try await hub.request(
                .post, "/message", as: .admin,
                json: RelayOutboxTests.information(extra: #", "override_preferences": "yes""#))
            #expect(malformed.status == .unprocessableContent && malformed.errorCode == "invalid_field")
            #expect(try await hub.database.collection(CollectionName.message).countDocuments([:]) == 0)
            // The legacy hours subject is Forced: its Alert goes past every preference, an Information does not.
            let forced = try await hub.request(.post, "/message", as: .communicator, json: RelayOutboxTests.alert())
            #expect(try forced.json()["override_preferences"] == true)
            let plain = try await hub.request(
                .post, "/message", as: .communicator, json: RelayOutboxTests.information())
            #expect(try plain.json()["override_preferences"] == nil)
            let chosen = try await hub.request(
                .post, "/message", as: .admin,
                json: RelayOutboxTests.information(extra: #", "override_preferences": true"#))
            #expect(chosen.status == .created)
            #expect(try chosen.json()["override_preferences"] == true)
        }
    }
}

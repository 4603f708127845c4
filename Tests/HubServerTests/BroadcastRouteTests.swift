import DAO
import Foundation
import HubTime
import HTTPTypes
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// `GET /broadcasts/active` and `GET /device/:deviceID/broadcasts`: the banners an app shows at launch, whenever it
/// was installed, against a real hub.
@Suite("Active banners")
struct BroadcastRouteTests {
    /// A message body to the hours topic (Forced, Alert: every phone has it) with extra members.
    static func banner(
        _ title: String, topic: String = DeviceTests.forced, distribution: String = "Alert",
        extra: String
    ) -> String {
        #"{"title": "\#(title)", "desc": "Back at 6 pm", "message": "The portal is down for upgrades.", "topic_key": "\#(topic)", "distribution": "\#(distribution)"\#(extra)}"#
    }

    /// The titles of a list's banners, in order.
    static func titles(_ response: TestResponse) throws -> [String] {
        try response.json()["broadcasts"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue } ?? []
    }

    @Test func aDeviceRegisteredAfterADowntimeBannerGetsItFromBothListsNewestFirst() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let now = UnixTime.nowMilliseconds()
            for (title, extra) in [
                ("Downtime", #", "kind": "downtime", "expires_at": \#(now + 3_600_000)"#),
                ("General", ""),
                ("Quiz", #", "kind": "quiz""#),
                ("Later", #", "kind": "downtime", "send_at": \#(now + 3_600_000)"#),
                ("Flags", #", "kind": "downtime", "display": false, "data": {"quiz": "on"}"#),
                ("Fixed", #", "dismissible": false"#),
                (
                    "Diwali",
                    #", "kind": "greeting", "image": "https://school.example/diwali.png", "translations": {"hi": {"title": "दीपावली की शुभकामनाएँ", "desc": "6 बजे", "message": ""}}"#
                ),
            ] {
                let sent = try await hub.request(.post, "/message", as: .admin, json: Self.banner(title, extra: extra))
                #expect(sent.status == .created, "\(title): \(sent.text)")
            }
            // Another topic's banner is not this topic's.
            #expect(
                try await hub.request(
                    .post, "/message", as: .admin,
                    json: Self.banner(
                        "Books", topic: DeviceTests.optional, distribution: "Information",
                        extra: #", "kind": "downtime""#)
                ).status == .created)

            let phone = try await hub.register("late-joiner")
            let anonymous = try await hub.request(.get, "/broadcasts/active?topic_key=\(DeviceTests.forced)")
            #expect(anonymous.status == .ok)
            #expect(try Self.titles(anonymous) == ["Diwali", "Fixed", "Downtime"])
            let own = try await hub.request(.get, "/device/\(phone.deviceID)/broadcasts", as: .token(phone.secret))
            #expect(own.status == .ok)
            #expect(try Self.titles(own) == ["Diwali", "Fixed", "Downtime"])

            // The public view: the banner's fields, never the relay's bookkeeping nor the index's mark.
            let diwali = try #require(try anonymous.json()["broadcasts"]?.arrayValue?.first?.documentValue)
            #expect(
                diwali["kind"]?.stringValue == "greeting"
                    && diwali["image"]?.stringValue == "https://school.example/diwali.png")
            #expect(diwali[path: "translations.hi.title"]?.stringValue == "दीपावली की शुभकामनाएँ")
            #expect(diwali["banner"] == nil && diwali[path: "relay.lease_owner"] == nil && diwali["sender"] != nil)
            let downtime = try #require(try anonymous.json()["broadcasts"]?.arrayValue?.last?.documentValue)
            #expect(downtime["expires_at"]?.int64Value == now + 3_600_000)

            // Several topics in one list, and a limit.
            let both = try await hub.request(
                .get, "/broadcasts/active?topic_key=\(DeviceTests.forced),\(DeviceTests.optional)&limit=2")
            #expect(try Self.titles(both) == ["Books", "Diwali"])
            let optional = try await hub.request(
                .get, "/broadcasts/active?topic_key=\(DeviceTests.optional)&topic_key=unknown")
            #expect(try Self.titles(optional) == ["Books"])
        }
    }

    @Test func anExpiredBannerLeavesBothListsAndTheCatchUp() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let now = UnixTime.nowMilliseconds()
            let sent = try await hub.request(
                .post, "/message", as: .admin,
                json: Self.banner(
                    "Outage", extra: #", "kind": "downtime", "expires_at": \#(now + 600_000)"#))
            let key = try #require(try sent.json()["msi_key"]?.stringValue.flatMap(ObjectID.init(hex:)))
            // Banners without an expiry: one sent 27 days ago is live, one sent 29 days ago is not (FCM's 28 days).
            // Stored as the hub stores a message (its banner queue entry first).
            let messages = hub.database.collection(CollectionName.message)
            for (title, age) in [("Recent", Int64(27)), ("Old", Int64(29))] {
                _ = try await MessageDAO(database: hub.database).add(document: [
                    "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": .string(title),
                    "desc": "", "message": "", "topic_key": .string(DeviceTests.forced), "distribution": "Information",
                    "sender": "admin", "timestamp": .int64(now - age * 24 * 3_600_000), "kind": "greeting",
                    "banner": true, "relay": ["state": "sent"],
                ])
            }
            let phone = try await hub.register("expiry")
            let active = "/broadcasts/active?topic_key=\(DeviceTests.forced)"
            let device = "/device/\(phone.deviceID)/broadcasts"
            let catchUp = "/device/\(phone.deviceID)/messages?since=0"
            #expect(try Self.titles(try await hub.request(.get, active)) == ["Outage", "Recent"])
            #expect(
                try Self.titles(try await hub.request(.get, device, as: .token(phone.secret))) == ["Outage", "Recent"])
            func caughtUp() async throws -> [String] {
                try await hub.request(.get, catchUp, as: .token(phone.secret)).json()["messages"]?.arrayValue?
                    .compactMap { $0.documentValue?["title"]?.stringValue } ?? []
            }
            #expect(try await caughtUp().contains("Outage"))

            // Its expiry passes (the stored times moved back, as a clock moves on).
            _ = try await messages.updateOne(
                ["msi_key": .objectID(key)],
                [
                    "$set": ["expires_at": .int64(now - 1), "relay.expires_at": .int64(now - 1)]
                ])
            #expect(try Self.titles(try await hub.request(.get, active)) == ["Recent"])
            #expect(try Self.titles(try await hub.request(.get, device, as: .token(phone.secret))) == ["Recent"])
            #expect(try await !caughtUp().contains("Outage"))
        }
    }

    @Test func aDeviceListsItsPersonsAndGroupsBannersAndNeverAnotherPersons() async throws {
        try await HubHarness.with(seed: PersonMessageTests.seed, persons: try PersonBindingTests.persons()) { hub in
            let signer = await AssertionSigner.hmac(PersonBindingTests.secret)
            let student = try await hub.register("student-phone")
            #expect(
                try await hub.bind(student, try await signer.sign(AssertionSigner.claims(sub: "student-1"))).status
                    == .ok)
            let other = try await hub.register("other-phone")
            #expect(
                try await hub.bind(other, try await signer.sign(AssertionSigner.claims(sub: "student-3"))).status == .ok
            )
            for (to, title) in [
                (#"{"persons": ["student-3"]}"#, "For student 3"), (#"{"groups": ["class-7b"]}"#, "For 7B"),
                (#"{"persons": ["student-1"]}"#, "For student 1"),
            ] {
                // The direct token writes to persons; the group is open to the communicator.
                let sender: HubHarness.Caller =
                    to.contains("groups") ? .communicator : .token(PersonMessageTests.directToken)
                let sent = try await hub.request(
                    .post, "/message", as: sender,
                    json:
                        #"{"title": "\#(title)", "desc": "Exam moved", "message": "", "to": \#(to), "distribution": "Information", "dismissible": false}"#
                )
                #expect(sent.status == .created, "\(sent.text)")
            }
            #expect(
                try await hub.request(
                    .post, "/message", as: .admin,
                    json: Self.banner(
                        "Everyone", extra: #", "kind": "downtime""#)
                ).status == .created)

            let mine = try await hub.request(.get, "/device/\(student.deviceID)/broadcasts", as: .token(student.secret))
            #expect(try Self.titles(mine) == ["Everyone", "For student 1", "For 7B"])
            let personal = try #require(try mine.json()["broadcasts"]?.arrayValue?.dropFirst().first?.documentValue)
            #expect(personal["to"] == nil && personal["audience"]?.stringValue == "person")
            let theirs = try await hub.request(.get, "/device/\(other.deviceID)/broadcasts", as: .token(other.secret))
            #expect(try Self.titles(theirs) == ["Everyone", "For student 3"])
            // Nobody without the device's secret sees a private one.
            #expect(
                try Self.titles(try await hub.request(.get, "/broadcasts/active?topic_key=\(DeviceTests.forced)"))
                    == ["Everyone"])
        }
    }

    @Test func theListsRefuseABadQueryAndADeviceWithoutItsSecret() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let topic = DeviceTests.forced
            let many = (0...100).map { "t\($0)" }.joined(separator: ",")
            for query in [
                "", "?topic_key=", "?topic_key=,", "?topic_key=\(many)",
                "?topic_key=\(String(repeating: "a", count: 201))", "?topic_key=\(topic)&limit=0",
                "?topic_key=\(topic)&limit=51", "?topic_key=\(topic)&limit=x",
            ] {
                let answer = try await hub.request(.get, "/broadcasts/active\(query)")
                #expect(answer.status == .badRequest && answer.errorCode == "invalid_query", "\(query)")
            }
            #expect(try await hub.request(.get, "/broadcasts/active?topic_key=\(topic)&limit=50").status == .ok)
            let phone = try await hub.register("secret-a")
            let other = try await hub.register("secret-b")
            let path = "/device/\(phone.deviceID)/broadcasts"
            #expect(try await hub.request(.get, path).status == .unauthorized)
            #expect(try await hub.request(.get, path, as: .token(other.secret)).status == .unauthorized)
            #expect(try await hub.request(.get, path, as: .admin).status == .unauthorized)
            #expect(
                try await hub.request(.get, "/device/nope/broadcasts", as: .token(phone.secret)).status == .badRequest)
            let limited = try await hub.request(.get, "\(path)?limit=51", as: .token(phone.secret))
            #expect(limited.status == .badRequest && limited.errorCode == "invalid_query")
        }
    }
}

import DAO
import FakeFCM
import HTTPTypes
import Foundation
import HubCore
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// What the message routes show to whom: everyone sees a message once it is sent, and only its public fields; its
/// sender and admins see it scheduled, with the relay's detail.
@Suite("Public history")
struct PublicHistoryTests {
    /// The fields anyone may see of a message.
    static let publicKeys: Set<String> = [
        "_id", "msi_key", "title", "desc", "message", "topic_key", "distribution", "urgency",
        "sender", "timestamp", "ttl", "send_at", "relay", "lang", "translations",
        "image", "kind", "dismissible", "expires_at", "display", "data",
    ]

    /// A message `send_at` an hour from now.
    static func scheduled(_ title: String) -> String {
        RelayOutboxTests.information(title, extra: #", "send_at": \#(UnixTime.nowMilliseconds() + 3_600_000)"#)
    }

    /// The titles of a page's messages.
    static func titles(_ page: BSONDocument) -> [String] {
        page["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue } ?? []
    }

    /// Every message of a page shows public fields only, and its relay nothing but its state.
    static func expectPublic(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let messages = try response.json()["messages"]?.arrayValue?.compactMap(\.documentValue) ?? []
        for message in messages { expectPublic(message, sourceLocation: sourceLocation) }
        for secret in ["lease_owner", "last_error", "projects/", ProcessInfo.processInfo.hostName, "attempts"] {
            #expect(!response.text.contains(secret), "\(secret)", sourceLocation: sourceLocation)
        }
    }

    static func expectPublic(_ message: BSONDocument, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(Set(message.keys).isSubset(of: publicKeys), "\(message.keys)", sourceLocation: sourceLocation)
        #expect(
            message["relay"]?.documentValue.map { Array($0.keys) == ["state"] } ?? true, sourceLocation: sourceLocation)
    }

    @Test func anonymousHistoryHidesScheduledMessagesAndRelayInternals() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: HubHarness.legacy, relay: try RelayOutboxTests.relay(to: fake)) { hub in
                // One sent, one refused by FCM (its error text stored), then one scheduled: the newest.
                let sent = try await hub.post(RelayOutboxTests.information("Sent"))
                try await eventually { try await hub.relayState(sent) == "sent" }
                fake.failNext(1, status: 400)
                let failed = try await hub.post(RelayOutboxTests.information("Refused"))
                try await eventually { try await hub.relayState(failed) == "failed" }
                let stored = try await hub.database.collection(CollectionName.message).findOne([
                    "msi_key": .objectID(failed)
                ])
                #expect(stored?[path: "relay.components.data.last_error"]?.stringValue?.isEmpty == false)
                _ = try await hub.post(Self.scheduled("Later"))

                let topic = "topic_key=\(RelayOutboxTests.booksTopic)"
                let anonymous = try await hub.request(.get, "/message?\(topic)")
                #expect(anonymous.status == .ok)
                #expect(Self.titles(try anonymous.json()) == ["Refused", "Sent"])
                try Self.expectPublic(anonymous)
                let states = try anonymous.json()["messages"]?.arrayValue?.compactMap {
                    $0.documentValue?[path: "relay.state"]
                }
                #expect(states == ["failed", "sent"])
                // Left out by the query: a page of one is full, and its cursor leads on to the rest.
                let first = try await hub.request(.get, "/message?\(topic)&limit=1").json()
                #expect(Self.titles(first) == ["Refused"])
                let cursor = try #require(first["next_cursor"]?.stringValue)
                let second = try await hub.request(.get, "/message?\(topic)&limit=1&cursor=\(cursor)").json()
                #expect(Self.titles(second) == ["Sent"])
                #expect(second["next_cursor"] == .null)

                // Another communicator sees what the public sees.
                let other = try await hub.request(.get, "/message?\(topic)", as: .basic("ann", HubHarness.annPassword))
                #expect(Self.titles(try other.json()) == ["Refused", "Sent"])
                try Self.expectPublic(other)

                // The sender and an admin see the scheduled one and the relay's detail.
                for caller in [HubHarness.Caller.communicator, .admin] {
                    let detailed = try await hub.request(.get, "/message?\(topic)", as: caller).json()
                    #expect(Self.titles(detailed) == ["Later", "Refused", "Sent"])
                    let refused = detailed["messages"]?.arrayValue?[1].documentValue
                    #expect(refused?[path: "relay.components.data.last_error"]?.stringValue?.contains("400") == true)
                }
            }
        }
    }

    @Test func aScheduledMessageIsUnknownToOthersUntilItsSendTimeAndShownToItsSender() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let later = try await hub.post(Self.scheduled("Later"))
            let unknown = try await hub.request(.get, "/message/\(ObjectID().hex)")
            for caller in [HubHarness.Caller.anonymous, .basic("ann", HubHarness.annPassword)] {
                let hidden = try await hub.request(.get, "/message/\(later.hex)", as: caller)
                #expect(hidden.status == .notFound)
                #expect(hidden.errorCode == unknown.errorCode)
            }
            for caller in [HubHarness.Caller.communicator, .admin] {
                let shown = try await hub.request(.get, "/message/\(later.hex)", as: caller)
                #expect(shown.status == .ok)
                #expect(try shown.json()[path: "relay.send_at"]?.int64Value ?? 0 > UnixTime.nowMilliseconds())
            }

            // Once its send time has come, everyone sees it, with the time it was sent at.
            let sendAt = UnixTime.nowMilliseconds() + 3_000
            let soon = try await hub.post(
                RelayOutboxTests.information("Soon", extra: #", "send_at": \#(sendAt), "ttl": 600"#))
            let before = try await hub.request(.get, "/message/\(soon.hex)").status
            // Answered before the send time: the hub cannot have judged it come (a slow machine may answer later).
            if UnixTime.nowMilliseconds() < sendAt { #expect(before == .notFound) }
            try await eventually { try await hub.request(.get, "/message/\(soon.hex)").status == .ok }
            let shown = try await hub.request(.get, "/message/\(soon.hex)").json()
            Self.expectPublic(shown)
            #expect(shown["send_at"]?.int64Value == sendAt)
            #expect(shown["ttl"]?.int64Value == 600)
            #expect(shown["title"] == "Soon" && shown["sender"] == "bulletin-bot")
        }
    }

    @Test func theCatchUpShowsThePublicView() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let phone = try await hub.register("public-view")
                let key = try await hub.post(RelayOutboxTests.alert("Closed"))
                try await eventually { try await hub.relayState(key) == "sent" }
                let stored = try await hub.database.collection(CollectionName.message).findOne([
                    "msi_key": .objectID(key)
                ])
                #expect(stored?["relay"]?.documentValue?["components"] != nil)
                let page = try await hub.request(
                    .get, "/device/\(phone.deviceID)/messages?since=0", as: .token(phone.secret))
                #expect(page.status == .ok)
                #expect(Self.titles(try page.json()) == ["Closed"])
                try Self.expectPublic(page)
                #expect(try page.json()["messages"]?.arrayValue?.first?.documentValue?[path: "relay.state"] == "sent")
            }
        }
    }

    @Test func theRuleSaysWhoSeesTheDetail() throws {
        let message = try #require(
            Message(document: [
                "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": "t", "sender": "ann",
                "timestamp": .int64(1), "legacy_extra": "x",
                "relay": [
                    "state": "failed", "due_at": .int64(1), "lease_owner": "host/1/abc",
                    "components": ["data": ["state": "failed", "last_error": "FCM 400"]],
                ],
            ]))
        let ann = Identity(name: "ann", role: .communicator, kind: .user)
        let bob = Identity(name: "bob", role: .communicator, kind: .user)
        let root = Identity(name: "root", role: .admin, kind: .user)
        for viewer in [MessageViewer.caller(ann), .caller(root)] {
            #expect(MessageVisibility.view(message, for: viewer, now: 2)?.document == message.document)
        }
        for viewer in [MessageViewer.caller(bob), .anonymous, .device] {
            let shown = try #require(MessageVisibility.view(message, for: viewer, now: 2)?.document)
            #expect(Array(shown.keys) == ["_id", "msi_key", "title", "sender", "timestamp", "relay"])
            #expect(shown[path: "relay.state"] == "failed" && shown[path: "relay.lease_owner"] == nil)
        }
        // Scheduled: before `send_at` was recorded, a message never claimed and due later waits too.
        var waiting = message.document
        waiting["relay"] = ["state": "pending", "due_at": .int64(10), "attempts": .int32(0)]
        let scheduled = try #require(Message(document: waiting))
        #expect(MessageVisibility.view(scheduled, for: .anonymous, now: 5) == nil)
        #expect(MessageVisibility.view(scheduled, for: .anonymous, now: 10) != nil)
        #expect(MessageVisibility.view(scheduled, for: .caller(ann), now: 5) != nil)
        waiting["relay"] = ["state": "pending", "due_at": .int64(10), "attempts": .int32(1)]
        #expect(MessageVisibility.view(try #require(Message(document: waiting)), for: .anonymous, now: 5) != nil)
    }
}

import DAO
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// POST /message to persons and groups (`to`, `data`): who may send to whom (`RecipientPolicy`), the send rules of
/// `to` and `data`, privacy (never in the public history, 404 by key but to the sender and admins), and a device's
/// catch-up of its person's and their groups' messages, against a real hub.
@Suite("Messages to persons and groups")
struct PersonMessageTests {
    /// A token with the right `direct`, stored as `msi-hub token create --direct` stores it.
    static let directToken = "msi_test-direct-token-0123456789abcdef0123456789"

    /// The legacy cube, a group `class-7b` open to the communicator token, a group `staff` open to nobody, and a
    /// communicator token with the right `direct`.
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        let groups = GroupDAO(database: database)
        _ = try await groups.replace(
            id: "class-7b", name: "Class 7B", access: ["bulletin-bot"],
            persons: ["student-1", "student-2"])
        _ = try await groups.replace(id: "staff", name: "Staff", access: [], persons: ["teacher-1"])
        _ = try await TokenDAO(database: database).add(
            name: "direct-bot", role: .communicator,
            secretHash: Credentials.hash(token: directToken), direct: true)
    }

    /// A message body to `to` (JSON) with optional extra members.
    static func body(to: String, distribution: String = "Information", extra: String = "") -> String {
        #"{"title": "Fees", "desc": "Your fees are due", "message": "Please pay by Friday.", "to": \#(to), "distribution": "\#(distribution)"\#(extra)}"#
    }

    @Test func anAdminSendsToPersonsAndGroupsAndTheMessageIsStoredWithoutATopic() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let sent = try await hub.request(
                .post, "/message", as: .admin,
                json: Self.body(
                    to: #"{"persons": ["student-9", "student-9"], "groups": ["staff"]}"#, distribution: "Alert",
                    extra: #", "data": {"room": "r-17", "link": "school://fees"}"#))
            #expect(sent.status == .created)
            let body = try sent.json()
            #expect(body["topic_key"] == nil)
            let to = try #require(body["to"]?.documentValue)
            #expect(to["persons"]?.arrayValue?.compactMap(\.stringValue) == ["student-9"])
            #expect(to["groups"]?.arrayValue?.compactMap(\.stringValue) == ["staff"])
            #expect(body["data"]?.documentValue?["room"]?.stringValue == "r-17")
            let key = try #require(body["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
            let stored = try #require(
                try await hub.database.collection(CollectionName.message).findOne(["msi_key": .objectID(key)]))
            #expect(stored["topic_key"] == nil)
            #expect(stored["relay"]?.documentValue?["components"]?.documentValue?.elements.map(\.key) == ["devices"])
            // Two persons: sent from memory by the process that stored it.
            #expect(stored["relay"]?.documentValue?["state"]?.stringValue == "direct")

            // An audience past `directFanOutPersons` (the group's count and the person named) waits for a claim.
            _ = try await hub.database.collection(CollectionName.groups).updateOne(
                ["_id": "staff"], ["$set": ["member_count": .int64(MessageService.directFanOutPersons)]])
            let large = try await hub.request(
                .post, "/message", as: .admin,
                json: Self.body(to: #"{"persons": ["student-9"], "groups": ["staff"]}"#))
            let largeKey = try #require(try large.json()["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
            let claimed = try #require(
                try await hub.database.collection(CollectionName.message).findOne(["msi_key": .objectID(largeKey)]))
            // Stored pending (a worker may have claimed and sent it since), never under this process's record.
            #expect(claimed["relay"]?.documentValue?["state"]?.stringValue != "direct")
            #expect(claimed["relay"]?.documentValue?["seq"] == nil)
        }
    }

    @Test func whoMaySendToWhomIsTheRecipientPolicy() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let before = try await hub.database.collection(CollectionName.message).countDocuments()
            // A communicator: a group whose access names it, yes; another group, no; persons without `direct`, no.
            #expect(
                try await hub.request(
                    .post, "/message", as: .communicator,
                    json: Self.body(to: #"{"groups": ["class-7b"]}"#)
                ).status == .created)
            let closed = try await hub.request(
                .post, "/message", as: .communicator, json: Self.body(to: #"{"groups": ["staff"]}"#))
            #expect(closed.status == .forbidden)
            #expect(closed.errorCode == "recipient_access_denied")
            let persons = try await hub.request(
                .post, "/message", as: .communicator,
                json: Self.body(to: #"{"persons": ["student-1"]}"#))
            #expect(persons.status == .forbidden)
            #expect(persons.errorCode == "recipient_access_denied")
            // The right `direct` opens persons, not closed groups.
            #expect(
                try await hub.request(
                    .post, "/message", as: .token(Self.directToken),
                    json: Self.body(to: #"{"persons": ["student-1"]}"#)
                ).status == .created)
            let directToClosed = try await hub.request(
                .post, "/message", as: .token(Self.directToken),
                json: Self.body(to: #"{"groups": ["staff"]}"#))
            #expect(directToClosed.status == .forbidden)
            // A user with a password is held to the same rule.
            let ann = try await hub.request(
                .post, "/message", as: .basic("ann", HubHarness.annPassword),
                json: Self.body(to: #"{"persons": ["student-1"]}"#))
            #expect(ann.status == .forbidden)
            let unknown = try await hub.request(
                .post, "/message", as: .admin, json: Self.body(to: #"{"groups": ["nope"]}"#))
            #expect(unknown.status == .notFound)
            #expect(unknown.errorCode == "group_not_found")
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == before + 2)
        }
    }

    @Test func malformedRecipientsAndDataAreRefusedAndStoreNothing() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let topic = #", "topic_key": "\#(RelayOutboxTests.booksTopic)""#
            let cases: [(String, String, HTTPResponse.Status, String)] = [
                (
                    "topic and to", Self.body(to: #"{"persons": ["a"]}"#, extra: topic), .unprocessableContent,
                    "invalid_recipients"
                ),
                ("nobody", Self.body(to: #"{}"#), .unprocessableContent, "invalid_recipients"),
                (
                    "empty lists", Self.body(to: #"{"persons": [], "groups": []}"#), .unprocessableContent,
                    "invalid_recipients"
                ),
                ("unknown member", Self.body(to: #"{"people": ["a"]}"#), .unprocessableContent, "invalid_field"),
                ("not strings", Self.body(to: #"{"persons": [1]}"#), .unprocessableContent, "invalid_field"),
                ("not an object", Self.body(to: #"["a"]"#), .unprocessableContent, "invalid_field"),
                ("bad group id", Self.body(to: #"{"groups": ["a b"]}"#), .unprocessableContent, "invalid_recipients"),
                (
                    "reserved data key", Self.body(to: #"{"persons": ["a"]}"#, extra: #", "data": {"msi_key": "x"}"#),
                    .unprocessableContent, "invalid_data"
                ),
                (
                    "google data key", Self.body(to: #"{"persons": ["a"]}"#, extra: #", "data": {"google.x": "x"}"#),
                    .unprocessableContent, "invalid_body"
                ),
                (
                    "data not strings", Self.body(to: #"{"persons": ["a"]}"#, extra: #", "data": {"n": 1}"#),
                    .unprocessableContent, "invalid_field"
                ),
                (
                    "data too large",
                    Self.body(
                        to: #"{"persons": ["a"]}"#,
                        extra: #", "data": {"big": "\#(String(repeating: "x", count: 1_100))"}"#),
                    .unprocessableContent, "invalid_data"
                ),
                (
                    "too many persons",
                    Self.body(to: #"{"persons": [\#((0...1_000).map { "\"p\($0)\"" }.joined(separator: ","))]}"#),
                    .unprocessableContent, "invalid_recipients"
                ),
            ]
            for (label, json, status, code) in cases {
                let refused = try await hub.request(.post, "/message", as: .admin, json: json)
                #expect(refused.status == status, "\(label)")
                #expect(refused.errorCode == code, "\(label)")
            }
            // A topic message with `data` keeps the old rules (no `to`: topic_key is required).
            let missing = try await hub.request(
                .post, "/message", as: .admin,
                json:
                    #"{"title": "t", "desc": "d", "message": "m", "distribution": "Information"}"#)
            #expect(missing.errorCode == "missing_field")
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func privateMessagesAreSeenByTheirSenderAndAdminsOnly() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            let sent = try await hub.request(
                .post, "/message", as: .communicator,
                json: Self.body(to: #"{"groups": ["class-7b"]}"#))
            let key = try #require(try sent.json()["msi_key"]?.stringValue)
            let topicKey = try await hub.post(RelayOutboxTests.information("Public"))

            func history(_ caller: HubHarness.Caller) async throws -> [String] {
                let page = try await hub.request(.get, "/message", as: caller)
                #expect(page.status == .ok)
                return try page.json()["messages"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"]?.stringValue }
                    ?? []
            }
            #expect(try await history(.anonymous) == [topicKey.hex])
            #expect(try await history(.token(Self.directToken)) == [topicKey.hex])
            #expect(Set(try await history(.communicator)) == [key, topicKey.hex])
            #expect(Set(try await history(.admin)) == [key, topicKey.hex])

            #expect(try await hub.request(.get, "/message/\(key)").status == .notFound)
            #expect(try await hub.request(.get, "/message/\(key)", as: .token(Self.directToken)).status == .notFound)
            let own = try await hub.request(.get, "/message/\(key)", as: .communicator)
            #expect(own.status == .ok)
            #expect(try own.json()["to"]?.documentValue?["groups"]?.arrayValue?.first?.stringValue == "class-7b")
            #expect(try await hub.request(.get, "/message/\(key)", as: .admin).status == .ok)
        }
    }

    @Test func aDeviceCatchesUpWithItsPersonsAndTheirGroupsMessagesOnly() async throws {
        try await HubHarness.with(seed: Self.seed, persons: try PersonBindingTests.persons()) { hub in
            let signer = await AssertionSigner.hmac(PersonBindingTests.secret)
            // student-1 has two phones (one bound after the messages were sent); student-3 one; one phone is bound
            // to nobody.
            let first = try await hub.register("catch-up-a")
            #expect(
                try await hub.bind(first, try await signer.sign(AssertionSigner.claims(sub: "student-1"))).status == .ok
            )
            let other = try await hub.register("catch-up-c")
            #expect(
                try await hub.bind(other, try await signer.sign(AssertionSigner.claims(sub: "student-3"))).status == .ok
            )
            let unbound = try await hub.register("catch-up-d")

            let toPerson = try #require(
                try await hub.request(
                    .post, "/message", as: .token(Self.directToken),
                    json: Self.body(
                        to: #"{"persons": ["student-1"]}"#, extra: #", "data": {"room": "r-1"}"#)
                ).json()["msi_key"]?.stringValue)
            let toGroup = try #require(
                try await hub.request(
                    .post, "/message", as: .communicator,
                    json: Self.body(
                        to: #"{"groups": ["class-7b"]}"#)
                ).json()["msi_key"]?.stringValue)
            let toOther = try #require(
                try await hub.request(
                    .post, "/message", as: .token(Self.directToken),
                    json: Self.body(
                        to: #"{"persons": ["student-3"]}"#)
                ).json()["msi_key"]?.stringValue)

            let second = try await hub.register("catch-up-b")
            #expect(
                try await hub.bind(second, try await signer.sign(AssertionSigner.claims(sub: "student-1"))).status
                    == .ok)

            func caughtUp(_ phone: Phone) async throws -> [BSONDocument] {
                let page = try await hub.request(
                    .get, "/device/\(phone.deviceID)/messages?since=0", as: .token(phone.secret))
                #expect(page.status == .ok)
                return try page.json()["messages"]?.arrayValue?.compactMap(\.documentValue) ?? []
            }
            for phone in [first, second] {
                let messages = try await caughtUp(phone)
                #expect(messages.compactMap { $0["msi_key"]?.stringValue } == [toPerson, toGroup])
                let personal = try #require(messages.first)
                #expect(personal["data"]?.documentValue?["room"]?.stringValue == "r-1")
                #expect(personal["to"] == nil, "a device does not see whom else a message was for")
                #expect(personal["topic_key"] == nil)
                #expect(personal["audience"]?.stringValue == "person")
                #expect(messages.last?["audience"]?.stringValue == "group")
                #expect(messages.last?["group"]?.stringValue == "class-7b")
            }
            #expect(try await caughtUp(other).compactMap { $0["msi_key"]?.stringValue } == [toOther])
            #expect(try await caughtUp(unbound).isEmpty)

            // Unbound (logged out), the phone sees none of them any more.
            #expect(
                try await hub.request(.delete, "/device/\(second.deviceID)/person", as: .token(second.secret)).status
                    == .noContent)
            #expect(try await caughtUp(second).isEmpty)
        }
    }
}

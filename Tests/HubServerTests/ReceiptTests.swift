import DAO
import FakeFCM
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Receipts from devices (POST /device/:deviceID/receipts) and the reach report (GET /message/:msiKey/receipts):
/// idempotence, per-entry refusals, the counts kept as receipts arrive, exact reports for a topic message and a group
/// message, and the report's privacy. Against a real hub, the real database and, for a group, the fake FCM.
@Suite("Receipts and the reach report", .tags(.faults))
struct ReceiptTests {
    /// A device stored as registration stores it, with a secret the test knows, bound to `person`.
    struct Handset: Sendable {
        let id = ObjectID()
        let token: String
        let person: String?
        let platform: Platform
        var secret: String { "msd_secret-of-\(token)" }

        init(_ token: String, person: String? = nil, platform: Platform = .android) {
            self.token = token
            self.person = person
            self.platform = platform
        }
    }

    /// Stores `handsets` as registered devices, each wanting `topics` (as registration records its wishes).
    static func seed(_ handsets: [Handset], topics: [String] = [], in database: MongoDatabase) async throws {
        try await database.collection(CollectionName.devices).insertMany(
            handsets.map { handset in
                var document: BSONDocument = [
                    "_id": .objectID(handset.id), "registration": .string(handset.token),
                    "platform": .string(handset.platform.rawValue), "secret_hash": .string(Secret.hash(handset.secret)),
                    "state": "active", "created_at": 0, "updated_at": 0,
                ]
                if let person = handset.person { document["person"] = .string(person) }
                return document
            })
        let wishes = handsets.flatMap { handset in
            topics.map { topic -> BSONDocument in
                [
                    "_id": .objectID(ObjectID()), "device": .objectID(handset.id),
                    "registration": .string(handset.token),
                    "platform": .string(handset.platform.rawValue), "topic": .string(topic), "want": true,
                    "applied": true, "pending": false, "due_at": 0, "attempts": 0, "updated_at": 0,
                ]
            }
        }
        if !wishes.isEmpty { try await database.collection(CollectionName.subscriptions).insertMany(wishes) }
    }

    /// The Forced subject "Opening hours" of the legacy cube, and its optional sibling "New books".
    static let hoursTopic = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03"
    static let booksTopic = RelayOutboxTests.booksTopic

    /// A receipt entry as JSON.
    static func entry(_ key: String, _ event: String, response: String? = nil, at: Int64 = 1_760_000_000_000) -> String
    {
        #"{"msi_key": "\#(key)", "event": "\#(event)""# + (response.map { #", "response": "\#($0)""# } ?? "")
            + #", "at": \#(at)}"#
    }

    /// Posts `entries` as `handset`; the answer's results as (status, code) pairs.
    static func post(_ entries: [String], as handset: Handset, on hub: HubHarness) async throws
        -> [(status: String, code: String?)]
    {
        let response = try await hub.request(
            .post, "/device/\(handset.id.hex)/receipts", as: .token(handset.secret),
            json: "[" + entries.joined(separator: ",") + "]")
        #expect(response.status == .ok, "\(response.text)")
        let results = try response.json()["results"]?.arrayValue?.compactMap(\.documentValue) ?? []
        #expect(results.map { $0["index"]?.int64Value } == entries.indices.map { Int64($0) })
        return results.map { ($0["status"]?.stringValue ?? "", $0["code"]?.stringValue) }
    }

    /// Sends a topic message as the communicator and returns its `msi_key`.
    static func sendTopic(_ topic: String, distribution: String = "Alert", on hub: HubHarness) async throws -> String {
        let response = try await hub.request(
            .post, "/message", as: .communicator,
            json:
                #"{"title": "Closed", "desc": "Closed today", "message": "The library is closed today.", "topic_key": "\#(topic)", "distribution": "\#(distribution)"}"#
        )
        #expect(response.status == .created, "\(response.text)")
        return try #require(try response.json()["msi_key"]?.stringValue)
    }

    // MARK: Receipts

    @Test func receiptsAreIdempotentPerDeviceMessageAndEvent() async throws {
        let phone = Handset("idem-phone")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let batch = [Self.entry(key, "received"), Self.entry(key, "opened"), Self.entry(key, "received")]
            let first = try await Self.post(batch, as: phone, on: hub)
            #expect(first.map(\.status) == ["stored", "stored", "duplicate"])
            let again = try await Self.post(batch + [Self.entry(key, "acknowledged")], as: phone, on: hub)
            #expect(again.map(\.status) == ["duplicate", "duplicate", "duplicate", "stored"])

            let receipts = hub.database.collection(CollectionName.receipts)
            #expect(try await receipts.countDocuments() == 3)
            let msiKey = try #require(ObjectID(hex: key))
            let message = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(msiKey)])?["_id"]?.objectIDValue)
            let stored = try #require(
                try await receipts.findOne(["_id": .string("\(message.hex)/\(phone.id.hex)/opened")]))
            #expect(stored["platform"] == "android" && stored["at"]?.int64Value == 1_760_000_000_000)
            // The counts hold each receipt once, however often it was posted.
            let counts = try #require(
                try await hub.database.collection(CollectionName.receiptCounts)
                    .findOne(["_id": .objectID(message)]))
            #expect(counts[path: "events.received"]?.int64Value == 1)
            #expect(counts[path: "events.opened"]?.int64Value == 1)
            #expect(counts[path: "events.acknowledged"]?.int64Value == 1)
            #expect(counts[path: "platforms.android.received"]?.int64Value == 1)
        }
    }

    @Test func eachNewAcknowledgementEmitsMessageAcknowledgedOnce() async throws {
        let phone = Handset("acknowledging-phone", person: "student-1")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
            try await WebhookDAO(database: database, subscribers: WebhookSubscribers()).insert(
                Webhook(
                    id: ObjectID(), url: "https://gateway.school.invalid/hook", events: ["message.acknowledged"],
                    secret: "whsec_dGVzdC1zZWNyZXQtMDEyMzQ1Njc4OWFiY2RlZg==", createdAt: 0))
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let batch = [Self.entry(key, "received"), Self.entry(key, "acknowledged", response: "On my way")]
            _ = try await Self.post(batch, as: phone, on: hub)
            _ = try await Self.post(batch, as: phone, on: hub)
            let events = try await hub.database.collection(CollectionName.webhookDeliveries).find([:])
            #expect(events.count == 1)
            let body = try JSONParser().document(from: Array((events.first?["body"]?.stringValue ?? "").utf8))
            #expect(body["type"] == "message.acknowledged")
            #expect(body[path: "data.msi_key"]?.stringValue == key)
            #expect(body[path: "data.device"]?.stringValue == phone.id.hex)
            #expect(body[path: "data.person"] == "student-1" && body[path: "data.response"] == "On my way")
        }
    }

    @Test func badEntriesAreRejectedOneByOneAndTheRestStored() async throws {
        let phone = Handset("rejecting-phone"), other = Handset("books-reader")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
            try await Self.seed([other], topics: [Self.booksTopic], in: database)
            // A message that asked for responses.
            _ = try await MessageDAO(database: database).add(
                MessageDraft(
                    title: "Are you safe?", desc: "", message: "Answer please.", topicKey: Self.hoursTopic,
                    distribution: .alert, sender: "bulletin-bot",
                    extra: ["ack": ["responses": ["I'm safe", "I need help"], "within_s": 600, "resend": 2]]))
        }) { hub in
            let hours = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let books = try await Self.sendTopic(Self.booksTopic, distribution: "Information", on: hub)
            let asking = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["title": "Are you safe?"])?["msi_key"]?.objectIDValue?.hex)
            let results = try await Self.post(
                [
                    Self.entry(hours, "received"),
                    Self.entry(ObjectID().hex, "received"),  // no such message
                    Self.entry("not-a-key", "opened"),  // not a key at all
                    Self.entry(books, "received"),  // not of the phone's topics
                    Self.entry(asking, "acknowledged", response: "Maybe"),  // not one of its responses
                    Self.entry(asking, "acknowledged"),  // it asked for one
                    Self.entry(hours, "opened", response: "hello"),  // a response with another event
                    Self.entry(asking, "acknowledged", response: "I need help"),
                    Self.entry(hours, "acknowledged", response: "Seen, thanks"),  // any short text where none was asked
                ], as: phone, on: hub)
            #expect(
                results.map(\.status) == [
                    "stored", "rejected", "rejected", "rejected", "rejected", "rejected",
                    "rejected", "stored", "stored",
                ])
            #expect(
                results.map(\.code) == [
                    nil, "not_a_recipient", "not_a_recipient", "not_a_recipient",
                    "invalid_response", "invalid_response", "invalid_response", nil, nil,
                ])
            #expect(try await hub.database.collection(CollectionName.receipts).countDocuments() == 3)
            // The books reader may report the books message, not the hours one.
            #expect(
                try await Self.post(
                    [Self.entry(books, "received"), Self.entry(hours, "received")], as: other,
                    on: hub
                ).map(\.code) == [nil, "not_a_recipient"])
        }
    }

    @Test func aMalformedBatchIs422AndStoresNothing() async throws {
        let phone = Handset("malformed-phone")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let good = Self.entry(key, "received")
            let path = "/device/\(phone.id.hex)/receipts"
            let cases: [(String, String)] = [
                ("an object", #"{"msi_key": "\#(key)"}"#),
                ("an unknown event", "[\(good), \(Self.entry(key, "deleted"))]"),
                ("no time", #"[\#(good), {"msi_key": "\#(key)", "event": "opened"}]"#),
                (
                    "a long response",
                    "[\(good), \(Self.entry(key, "acknowledged", response: String(repeating: "x", count: 201)))]"
                ),
                ("not an object", "[\(good), 7]"),
                ("too many", "[" + Array(repeating: good, count: 501).joined(separator: ",") + "]"),
            ]
            for (label, json) in cases {
                let refused = try await hub.request(.post, path, as: .token(phone.secret), json: json)
                #expect(refused.status == .unprocessableContent, "\(label)")
                #expect(refused.errorCode != nil, "\(label)")
            }
            #expect(try await hub.request(.post, path, as: .token(phone.secret), json: "[").status == .badRequest)
            #expect(
                try await hub.request(.post, path, as: .token("msd_wrong"), json: "[\(good)]").status == .unauthorized)
            #expect(try await hub.database.collection(CollectionName.receipts).countDocuments() == 0)
            #expect(try await hub.database.collection(CollectionName.receiptCounts).countDocuments() == 0)
        }
    }

    // MARK: Only the audience, bounded

    /// Subscribes (`true`) or unsubscribes `handset` to `topic` through its own route, then lets a millisecond pass
    /// so that what happens next happens later.
    static func wish(_ want: Bool, _ topic: String, for handset: Handset, on hub: HubHarness) async throws {
        let response = try await hub.request(
            want ? .put : .delete, "/device/\(handset.id.hex)/subscriptions/\(topic)",
            as: .token(handset.secret))
        #expect(response.status == (want ? .ok : .noContent), "\(response.text)")
        try await Task.sleep(for: .milliseconds(5))
    }

    /// Sends a topic message, then lets a millisecond pass.
    static func sendLater(_ topic: String, on hub: HubHarness) async throws -> String {
        let key = try await sendTopic(topic, distribution: "Information", on: hub)
        try await Task.sleep(for: .milliseconds(5))
        return key
    }

    @Test func aDeviceThatUnsubscribedBeforeAMessageWasSentIsNotARecipient() async throws {
        let left = Handset("left-before"), stayed = Handset("stayed"), leftAfter = Handset("left-after")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([left, stayed, leftAfter], in: database)
        }) { hub in
            for handset in [left, stayed, leftAfter] {
                try await Self.wish(true, Self.booksTopic, for: handset, on: hub)
            }
            try await Self.wish(false, Self.booksTopic, for: left, on: hub)
            let key = try await Self.sendLater(Self.booksTopic, on: hub)
            try await Self.wish(false, Self.booksTopic, for: leftAfter, on: hub)

            #expect(
                try await Self.post([Self.entry(key, "received")], as: left, on: hub).map(\.code)
                    == ["not_a_recipient"])
            // Those subscribed when it was sent report it, even one that left since.
            #expect(try await Self.post([Self.entry(key, "received")], as: stayed, on: hub).map(\.status) == ["stored"])
            #expect(
                try await Self.post([Self.entry(key, "received")], as: leftAfter, on: hub).map(\.status)
                    == ["stored"])
            #expect(try await hub.database.collection(CollectionName.receipts).countDocuments() == 2)
        }
    }

    @Test func aDeviceThatSubscribedAfterAMessageWasSentIsNotARecipient() async throws {
        let late = Handset("subscribed-late"), back = Handset("came-back")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([late, back], in: database)
        }) { hub in
            try await Self.wish(true, Self.booksTopic, for: back, on: hub)
            try await Self.wish(false, Self.booksTopic, for: back, on: hub)
            let before = try await Self.sendLater(Self.booksTopic, on: hub)
            try await Self.wish(true, Self.booksTopic, for: late, on: hub)
            try await Self.wish(true, Self.booksTopic, for: back, on: hub)
            let after = try await Self.sendLater(Self.booksTopic, on: hub)

            for handset in [late, back] {
                #expect(
                    try await Self.post(
                        [Self.entry(before, "received"), Self.entry(after, "received")],
                        as: handset, on: hub
                    ).map(\.code) == ["not_a_recipient", nil])
            }
            let receipts = try await hub.database.collection(CollectionName.receipts).find([:])
            #expect(receipts.count == 2)
        }
    }

    @Test func aResponseOver200BytesIs422AndChangesNothing() async throws {
        let phone = Handset("long-answer")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let path = "/device/\(phone.id.hex)/receipts"
            // One character of 60 KB (a letter and 30,000 combining accents), and 201 bytes in 101 characters.
            let huge = "e" + String(repeating: "\u{301}", count: 30_000)
            #expect(huge.count == 1 && huge.utf8.count > 60_000)
            for response in [huge, String(repeating: "é", count: 100) + "x"] {
                let refused = try await hub.request(
                    .post, path, as: .token(phone.secret),
                    json:
                        "[\(Self.entry(key, "received")), \(Self.entry(key, "acknowledged", response: response))]")
                #expect(refused.status == .unprocessableContent)
                #expect(refused.errorCode == "field_too_long")
            }
            #expect(try await hub.database.collection(CollectionName.receipts).countDocuments() == 0)
            #expect(try await hub.database.collection(CollectionName.receiptCounts).countDocuments() == 0)
            // 200 bytes is the limit, and is taken.
            #expect(
                try await Self.post(
                    [Self.entry(key, "acknowledged", response: String(repeating: "é", count: 100))],
                    as: phone, on: hub
                ).map(\.status) == ["stored"])
        }
    }

    @Test func freeTextResponsesAreCountedInOneBucketNotAsFieldsOfTheCounts() async throws {
        let phones = (0..<3).map { Handset("free-text-\($0)") }
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed(phones, topics: [Self.hoursTopic], in: database)
            _ = try await MessageDAO(database: database).add(
                MessageDraft(
                    title: "Are you safe?", desc: "", message: "Answer please.", topicKey: Self.hoursTopic,
                    distribution: .alert, sender: "bulletin-bot",
                    extra: ["ack": ["responses": ["I'm safe", "I need help"], "within_s": 600, "resend": 2]]))
        }) { hub in
            let free = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let asking = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["title": "Are you safe?"])?["msi_key"]?.objectIDValue?.hex)
            for (index, phone) in phones.enumerated() {
                let text = "Answer \(index) with a dot. and a $ sign " + String(repeating: "z", count: index * 40)
                #expect(
                    try await Self.post(
                        [
                            Self.entry(free, "acknowledged", response: text),
                            Self.entry(asking, "acknowledged", response: "I'm safe"),
                        ],
                        as: phone, on: hub
                    ).map(\.status) == ["stored", "stored"])
            }
            let messages = hub.database.collection(CollectionName.message)
            func counts(_ key: String) async throws -> BSONDocument {
                let msiKey = try #require(ObjectID(hex: key))
                let id = try #require(try await messages.findOne(["msi_key": .objectID(msiKey)])?["_id"])
                let counts = hub.database.collection(CollectionName.receiptCounts)
                return try #require(try await counts.findOne(["_id": id]))
            }
            let freeCounts = try await counts(free)
            #expect(freeCounts["responses"] == nil)
            #expect(freeCounts["free_text"]?.int64Value == 3)
            #expect(
                freeCounts.keys.sorted() == ["_id", "area", "channel", "events", "free_text", "pending", "platforms"])
            // Offered responses keep their own names.
            let askingCounts = try await counts(asking)
            #expect(askingCounts["responses"]?.documentValue?.keys == ["I'm safe"])
            #expect(askingCounts["free_text"] == nil)
            let report = try await hub.request(.get, "/message/\(free)/receipts", as: .communicator).json()
            #expect(report["free_text_responses"]?.int64Value == 3)
            #expect(report["responses"]?.documentValue?.isEmpty == true)
            // The text itself is kept with the receipt (and goes to webhooks).
            let stored = try await hub.database.collection(CollectionName.receipts).find(["response": ["$exists": true]]
            )
            #expect(stored.count == 6)
        }
    }

    @Test func anUnknownKeyAndAKeyTheDeviceMayNotSeeAnswerAlike() async throws {
        let phone = Handset("oracle-probe"), reader = Handset("books-only")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([phone], topics: [Self.hoursTopic], in: database)
            try await Self.seed([reader], topics: [Self.booksTopic], in: database)
        }) { hub in
            let books = try await Self.sendTopic(Self.booksTopic, distribution: "Information", on: hub)
            let path = "/device/\(phone.id.hex)/receipts"
            let json = "[\(Self.entry(ObjectID().hex, "received")), \(Self.entry(books, "received"))]"
            let response = try await hub.request(.post, path, as: .token(phone.secret), json: json)
            #expect(response.status == .ok)
            let results = try response.json()["results"]?.arrayValue?.compactMap(\.documentValue) ?? []
            #expect(results.count == 2)
            let shapes = results.map { result in result.filter { $0.key != "index" }.map { "\($0.key)=\($0.value)" } }
            #expect(shapes.first == shapes.last)
            #expect(results.first?["code"] == "not_a_recipient")
        }
    }

    // MARK: The report

    @Test func theReportOfATopicMessageCountsExactly() async throws {
        let a = Handset("topic-a"), b = Handset("topic-b"), c = Handset("topic-c", platform: .ios)
        let optedOut = Handset("topic-opted-out")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([a, b, c], topics: [Self.hoursTopic], in: database)
            try await Self.seed([optedOut], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            _ = try await Self.post(
                [
                    Self.entry(key, "received"), Self.entry(key, "opened"),
                    Self.entry(key, "acknowledged", response: "On my way"),
                ], as: a, on: hub)
            _ = try await Self.post([Self.entry(key, "received"), Self.entry(key, "acknowledged")], as: b, on: hub)
            _ = try await Self.post([Self.entry(key, "received"), Self.entry(key, "received")], as: c, on: hub)
            #expect(
                try await Self.post([Self.entry(key, "received")], as: optedOut, on: hub).map(\.code)
                    == ["not_a_recipient"])

            let path = "/message/\(key)/receipts"
            try await eventually("the message is sent") {
                try await hub.request(.get, path, as: .communicator).json()["relay_state"] == "sent"
            }
            let report = try await hub.request(.get, path, as: .communicator)
            #expect(report.status == .ok)
            let body = try report.json()
            #expect(body["audience_kind"] == "topic")
            #expect(
                ["audience", "fcm_accepted", "received", "opened", "acknowledged", "not_answered", "unreachable"]
                    .map { body[$0]?.int64Value } == [3, 3, 3, 1, 2, 1, 0])
            // The message offered no responses: "On my way" is free text, counted, not named.
            #expect(body[path: "responses"]?.documentValue?.isEmpty == true)
            #expect(body["free_text_responses"]?.int64Value == 1)
            #expect(body[path: "platforms.android.audience"]?.int64Value == 2)
            #expect(body[path: "platforms.android.acknowledged"]?.int64Value == 2)
            #expect(body[path: "platforms.ios.audience"]?.int64Value == 1)
            #expect(body[path: "platforms.ios.received"]?.int64Value == 1)
            #expect(body[path: "platforms.ios.acknowledged"]?.int64Value == 0)
            #expect(body[path: "channel.name"] == "Campus" && body[path: "area.name"] == "Library")
            #expect(body[path: "channel.id"] == "5a0b1c2d3e4f5a6b7c8d9e01")
            let silent = body["not_answered_devices"]?.arrayValue?.compactMap(\.documentValue) ?? []
            #expect(silent.map { $0["device"]?.stringValue ?? "" } == [c.id.hex])
            #expect(silent.first?["platform"] == "ios")
            #expect(body["next"] == .null)
        }
    }

    @Test func theReportOfAGroupMessageCountsExactlyAndIsItsSendersOnly() async throws {
        try await FakeFCM.with { fake in
            let m1a = Handset("m1-a", person: "m1"), m1b = Handset("m1-b", person: "m1", platform: .ios)
            let m2 = Handset("m2", person: "m2"), m3 = Handset("m3-gone", person: "m3")
            let outsider = Handset("outsider", person: "m9")
            try await HubHarness.with(
                seed: { database in
                    try await HubHarness.legacy(database)
                    try await Self.seed([m1a, m1b, m2, m3, outsider], in: database)
                    _ = try await GroupDAO(database: database).replace(
                        id: "class-7b", name: "7B", access: ["bulletin-bot"],
                        persons: ["m1", "m2", "m3"])
                }, relay: try FanOutTests.relay(to: fake)
            ) { hub in
                fake.markUnregistered("m3-gone")
                let sent = try await hub.request(
                    .post, "/message", as: .communicator,
                    json: """
                        {"title": "Trip", "desc": "Bring a coat", "message": "The trip leaves at 8.", "distribution": "Alert",
                         "to": {"groups": ["class-7b"]}}
                        """)
                #expect(sent.status == .created, "\(sent.text)")
                let key = try #require(try sent.json()["msi_key"]?.stringValue)
                try await eventually("every device has its answer", within: .seconds(30)) {
                    let counts = try await hub.request(.get, "/message/\(key)/deliveries", as: .admin).json()
                    return counts[path: "counts.sent"]?.int64Value == 3
                        && counts[path: "counts.unregistered"]?.int64Value == 1
                }
                _ = try await Self.post(
                    [Self.entry(key, "received"), Self.entry(key, "acknowledged")], as: m1a, on: hub)
                _ = try await Self.post([Self.entry(key, "received")], as: m1b, on: hub)
                _ = try await Self.post([Self.entry(key, "received"), Self.entry(key, "opened")], as: m2, on: hub)
                #expect(
                    try await Self.post([Self.entry(key, "received")], as: outsider, on: hub).map(\.code)
                        == ["not_a_recipient"])

                let path = "/message/\(key)/receipts"
                let body = try await hub.request(.get, path, as: .communicator).json()
                #expect(body["audience_kind"] == "persons")
                #expect(
                    ["audience", "fcm_accepted", "received", "opened", "acknowledged", "not_answered", "unreachable"]
                        .map { body[$0]?.int64Value } == [4, 3, 3, 1, 1, 3, 1])
                #expect(body[path: "platforms.android.audience"]?.int64Value == 3)
                #expect(body[path: "platforms.android.received"]?.int64Value == 2)
                #expect(body[path: "platforms.ios.audience"]?.int64Value == 1)
                #expect(body[path: "platforms.ios.received"]?.int64Value == 1)
                #expect(body["channel"] == nil)
                // Persons beside devices: m1 answered on one of their two devices.
                #expect(body["persons"] == ["audience": 3, "acknowledged": 1, "not_answered": 2])
                let silent = body["not_answered_devices"]?.arrayValue?.compactMap(\.documentValue) ?? []
                #expect(silent.map { $0["device"]?.stringValue ?? "" } == [m1b, m2, m3].map(\.id.hex).sorted())
                #expect(Set(silent.map { $0["person"]?.stringValue ?? "" }) == ["m1", "m2", "m3"])

                // Pages by cursor: each silent device once.
                let first = try await hub.request(.get, path + "?limit=2", as: .admin).json()
                let next = try #require(first["next"]?.stringValue)
                let second = try await hub.request(.get, path + "?limit=2&cursor=\(next)", as: .admin).json()
                let paged =
                    (first["not_answered_devices"]?.arrayValue ?? [])
                    + (second["not_answered_devices"]?.arrayValue ?? [])
                #expect(
                    paged.compactMap { $0.documentValue?["device"]?.stringValue }
                        == silent.map { $0["device"]?.stringValue ?? "" })
                #expect(second["next"] == .null)

                // Another communicator is told there is no such message, as for its deliveries.
                let other = try await hub.request(.get, path, as: .basic("ann", HubHarness.annPassword))
                #expect(other.status == .notFound)
                #expect(other.errorCode == "message_not_found")
                #expect(try await hub.request(.get, path).status == .unauthorized)
                #expect(
                    try await hub.request(.get, "/message/\(ObjectID().hex)/receipts", as: .admin).status == .notFound)
                #expect(try await hub.request(.get, path + "?cursor=zz", as: .admin).status == .badRequest)
            }
        }
    }
    // MARK: At scale

    @Test func aBatchWhoseCountingWasInterruptedIsCountedOnceByTheRecount() async throws {
        let a = Handset("counted-phone"), b = Handset("crashed-phone", platform: .ios)
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([a, b], topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            _ = try await Self.post([Self.entry(key, "received")], as: a, on: hub)
            let msiKey = try #require(ObjectID(hex: key))
            let message = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(msiKey)])?["_id"]?.objectIDValue)
            let counts = hub.database.collection(CollectionName.receiptCounts)
            // A store that finished leaves nothing pending.
            #expect(try await counts.findOne(["_id": .objectID(message)])?["pending"]?.arrayValue?.isEmpty == true)

            // A process that died after noting its batch and storing b's receipt, before counting it: the batch also
            // named a receipt it never stored and a's receipt, stored before by another batch.
            let stored = "\(message.hex)/\(b.id.hex)/acknowledged"
            _ = try await counts.updateOne(
                ["_id": .objectID(message)],
                [
                    "$push": [
                        "pending": [
                            "batch": "crashed-batch", "at": 1,
                            "receipts": [
                                .string(stored), .string("\(message.hex)/\(b.id.hex)/opened"),
                                .string("\(message.hex)/\(a.id.hex)/received"),
                            ],
                        ]
                    ]
                ])
            _ = try await hub.database.collection(CollectionName.receipts).insertOne([
                "_id": .string(stored), "message": .objectID(message), "device": .objectID(b.id),
                "event": "acknowledged", "response": "Seen", "at": 1_760_000_000_000, "platform": "ios",
                "stored_at": 1, "batch": "crashed-batch",
            ])
            let path = "/message/\(key)/receipts"
            let before = try await hub.request(.get, path, as: .communicator).json()
            #expect(before["received"]?.int64Value == 1 && before["acknowledged"]?.int64Value == 0)

            let dao = ReceiptDAO(database: hub.database)
            #expect(try await dao.recountInterrupted(before: 1_000) == 1)
            // Running it again (another replica, the next turn) counts nothing twice.
            #expect(try await dao.recountInterrupted(before: 1_000) == 0)
            let after = try await hub.request(.get, path, as: .communicator).json()
            #expect(["received", "opened", "acknowledged"].map { after[$0]?.int64Value } == [1, 0, 1])
            #expect(after[path: "platforms.ios.acknowledged"]?.int64Value == 1)
            #expect(after["free_text_responses"]?.int64Value == 1)
            #expect(try await counts.findOne(["_id": .objectID(message)])?["pending"]?.arrayValue?.isEmpty == true)
            // The device posting it again is told it was stored before, and nothing is counted twice.
            #expect(
                try await Self.post([Self.entry(key, "acknowledged", response: "Seen")], as: b, on: hub)
                    .map(\.status) == ["duplicate"])
            #expect(try await hub.request(.get, path, as: .communicator).json()["acknowledged"]?.int64Value == 1)
        }
    }

    @Test func theReportCountsATopicAudienceOnceAndStoresItOnTheSentMessage() async throws {
        let a = Handset("stored-a"), b = Handset("stored-b", platform: .ios), late = Handset("stored-late")
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed([a, b], topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let path = "/message/\(key)/receipts"
            try await eventually("the message is sent") {
                try await hub.request(.get, path, as: .communicator).json()["relay_state"] == "sent"
            }
            _ = try await hub.request(.get, path, as: .communicator)
            let msiKey = try #require(ObjectID(hex: key))
            let stored = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(msiKey)]))
            #expect(stored["audience_size"]?.int64Value == 2)
            #expect(stored[path: "reach_audience.source"] == "subscriptions")
            #expect(stored[path: "reach_audience.platforms.ios"]?.int64Value == 1)
            // A device subscribing afterwards is not counted: the report reads the stored audience.
            try await Self.seed([late], topics: [Self.hoursTopic], in: hub.database)
            let body = try await hub.request(.get, path, as: .communicator).json()
            #expect(body["audience"]?.int64Value == 2 && body["not_answered"]?.int64Value == 2)
            #expect(body[path: "platforms.android.audience"]?.int64Value == 1)
        }
    }
    @Test func thePagesOfThoseNotAnsweredOfALargeAudienceListEachSilentDeviceOnce() async throws {
        let handsets = (0..<450).map {
            Handset(String(format: "large-%03d", $0), platform: $0 % 2 == 0 ? .ios : .android)
        }
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await Self.seed(handsets, topics: [Self.hoursTopic], in: database)
        }) { hub in
            let key = try await Self.sendTopic(Self.hoursTopic, on: hub)
            let path = "/message/\(key)/receipts"
            try await eventually("the message is sent") {
                try await hub.request(.get, path, as: .communicator).json()["relay_state"] == "sent"
            }
            let msiKey = try #require(ObjectID(hex: key))
            let message = try #require(
                try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(msiKey)]))
            // The audience is stored with a mark every 200 devices.
            #expect(message[path: "reach_audience.marks"]?.arrayValue?.count == 2)
            let id = try #require(message["_id"]?.objectIDValue)
            // Every device received it, every third acknowledged (receipts stored as the hub stores them).
            let answering = handsets.indices.filter { $0 % 3 == 0 }.map { handsets[$0] }
            let receipts = handsets.map { ($0, Receipt.Event.received) } + answering.map { ($0, .acknowledged) }
            _ = try await hub.database.collection(CollectionName.receipts).insertMany(
                receipts.map { handset, event in
                    [
                        "_id": .string(Receipt.id(message: id, device: handset.id, event: event)),
                        "message": .objectID(id), "device": .objectID(handset.id), "event": .string(event.rawValue),
                        "at": 1, "platform": .string(handset.platform.rawValue), "batch": "test",
                    ]
                })
            var listed: [String] = []
            var cursor: String?
            repeat {
                let body = try await hub.request(
                    .get, path + "?limit=70" + (cursor.map { "&cursor=\($0)" } ?? ""),
                    as: .communicator
                ).json()
                let page = body["not_answered_devices"]?.arrayValue?.compactMap {
                    $0.documentValue?["device"]?.stringValue
                }
                #expect((page?.count ?? 0) <= 70)
                listed += page ?? []
                cursor = body["next"]?.stringValue
            } while cursor != nil
            let silent = Set(handsets.map(\.id.hex)).subtracting(answering.map(\.id.hex))
            #expect(listed == listed.sorted() && listed.count == silent.count && Set(listed) == silent)
        }
    }
}

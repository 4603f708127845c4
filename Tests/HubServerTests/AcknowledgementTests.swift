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

/// Acknowledgement requested (`ack` on POST /message): the audience fixed when the message is sent, re-sends by token
/// one urgency level up to the devices that have not acknowledged, then one signed `message.unacknowledged` naming
/// exactly them. Against a real hub, the real database, the fake FCM and a webhook receiver.
@Suite("Acknowledgement requested and escalation", .tags(.faults))
struct AcknowledgementTests {
    typealias Handset = ReceiptTests.Handset

    /// The requests the fake took for `token`, in order.
    static func requests(to token: String, _ fake: FakeFCM) -> [[String: Any]] {
        fake.received.map(\.message).filter { $0["token"] as? String == token }
    }

    /// A request's APNs interruption level and Android priority.
    static func levels(_ request: [String: Any]) -> (apns: String?, android: String?) {
        let apns = request["apns"] as? [String: Any]
        let aps = (apns?["payload"] as? [String: Any])?["aps"] as? [String: Any]
        return (aps?["interruption-level"] as? String, (request["android"] as? [String: Any])?["priority"] as? String)
    }

    /// The stored message of `key`.
    static func stored(_ key: String, in database: MongoDatabase) async throws -> BSONDocument {
        let msiKey = try #require(ObjectID(hex: key))
        return try #require(
            try await database.collection(CollectionName.message).findOne(["msi_key": .objectID(msiKey)]))
    }

    /// Creates a webhook for `message.unacknowledged` at `receiver`, which then checks signatures with its secret.
    static func subscribe(_ receiver: WebhookReceiver, on hub: HubHarness) async throws {
        let created = try await WebhookTests.create(hub, url: receiver.url, events: ["message.unacknowledged"])
        receiver.expect(secret: try #require(created["secret"]?.stringValue))
    }

    @Test func silentDevicesGetEachResendByTokenEscalatedAndOneWebhookNamesExactlyThem() async throws {
        let phones = [
            Handset("ack-0", person: "pupil-0"), Handset("ack-1", person: "pupil-1"),
            Handset("ack-2", person: "pupil-2", platform: .ios),
        ]
        try await FakeFCM.with { fake in
            try await WebhookReceiver.with { receiver in
                try await HubHarness.with(
                    seed: { database in
                        try await ReceiptTests.seed(phones, in: database)
                        _ = try await GroupDAO(database: database).replace(
                            id: "class-7b", name: "Class 7b", access: [],
                            persons: phones.compactMap(\.person))
                    }, relay: try FanOutTests.relay(to: fake), webhooks: try WebhookTests.loopback()
                ) { hub in
                    try await Self.subscribe(receiver, on: hub)
                    let response = try await hub.request(
                        .post, "/message", as: .admin,
                        json: #"""
                            {"title": "Are you safe?", "desc": "Answer now", "message": "Tell us you are safe.",
                             "distribution": "Alert", "to": {"groups": ["class-7b"]},
                             "ack": {"responses": ["I'm safe", "I need help"], "within_s": 2, "resend": 2}}
                            """#)
                    #expect(response.status == .created, "\(response.text)")
                    let key = try #require(try response.json()["msi_key"]?.stringValue)
                    #expect(try response.json()[path: "ack.within_s"]?.int64Value == 2)
                    // The first phone answers at once (its person is in the group: a receipt it may give).
                    let results = try await ReceiptTests.post(
                        [
                            ReceiptTests.entry(
                                key, "acknowledged",
                                response: "I'm safe")
                        ],
                        as: phones[0], on: hub)
                    #expect(results.map(\.status) == ["stored"])

                    try await eventually("the receiver gets message.unacknowledged", within: .seconds(90)) {
                        !receiver.accepted.isEmpty
                    }
                    try await eventually("the escalation is finished") {
                        try await Self.stored(key, in: hub.database)[path: "ack.finished_at"] != nil
                    }
                    let events = receiver.received
                    #expect(events.count == 1)
                    let event = try #require(events.first)
                    #expect(event.valid)
                    #expect(event.body["type"] == "message.unacknowledged")
                    #expect(event.body[path: "data.msi_key"]?.stringValue == key)
                    #expect(event.body[path: "data.title"] == "Are you safe?")
                    let devices = Set(event.body[path: "data.devices"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    #expect(devices == [phones[1].id.hex, phones[2].id.hex])
                    let persons = Set(event.body[path: "data.persons"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    #expect(persons == ["pupil-1", "pupil-2"])

                    // The one who answered got the first send only; the others it and exactly two re-sends.
                    #expect(Self.requests(to: "ack-0", fake).count == 1)
                    for phone in phones.dropFirst() {
                        let sent = Self.requests(to: phone.token, fake)
                        #expect(sent.count == 3, "\(phone.token)")
                        guard sent.count == 3 else { continue }
                        #expect(Self.levels(sent[0]).apns == "active")
                        for resend in sent.dropFirst() {
                            #expect(Self.levels(resend).apns == "time-sensitive", "\(phone.token)")
                            #expect(Self.levels(resend).android == "HIGH", "\(phone.token)")
                            #expect((resend["data"] as? [String: String])?["msi_key"] == key)
                            #expect((resend["data"] as? [String: String])?["urgency"] == "time-sensitive")
                        }
                    }

                    let message = try await Self.stored(key, in: hub.database)
                    #expect(message["audience_size"]?.int64Value == 3)
                    #expect(message[path: "ack.round"]?.int64Value == 2)
                    #expect(message[path: "ack.unacknowledged"]?.int64Value == 2)
                    #expect(message[path: "ack.next_at"] == nil)
                    let rounds = message[path: "ack.rounds"]?.arrayValue?.compactMap(\.documentValue) ?? []
                    #expect(rounds.map { $0["round"]?.int64Value } == [1, 2])
                    #expect(rounds.map { $0["silent"]?.int64Value } == [2, 2])
                    #expect(rounds.map { $0["sent"]?.int64Value } == [2, 2])
                    // Its sender and admins see what was asked and how it went.
                    let shown = try await hub.request(.get, "/message/\(key)", as: .admin).json()
                    #expect(shown[path: "ack.responses"] == .array(["I'm safe", "I need help"]))
                    #expect(shown[path: "ack.rounds"]?.arrayValue?.count == 2)
                }
            }
        }
    }

    @Test func aTopicMessagesAudienceIsFixedFromItsSubscribersAndASilentDeviceIsResentByToken() async throws {
        let answering = Handset("topic-ack-answers"), silent = Handset("topic-ack-silent", person: "teacher-3")
        let other = Handset("topic-ack-other-topic")
        try await FakeFCM.with { fake in
            try await WebhookReceiver.with { receiver in
                try await HubHarness.with(
                    seed: { database in
                        try await HubHarness.legacy(database)
                        try await ReceiptTests.seed(
                            [answering, silent], topics: [ReceiptTests.hoursTopic], in: database)
                        try await ReceiptTests.seed([other], topics: [ReceiptTests.booksTopic], in: database)
                    }, relay: try FanOutTests.relay(to: fake), webhooks: try WebhookTests.loopback()
                ) { hub in
                    try await Self.subscribe(receiver, on: hub)
                    let response = try await hub.request(
                        .post, "/message", as: .communicator,
                        json: #"""
                            {"title": "Closed", "desc": "Closed today", "message": "The library is closed today.",
                             "topic_key": "\#(ReceiptTests.hoursTopic)", "distribution": "Alert",
                             "ack": {"within_s": 2, "resend": 1}}
                            """#)
                    #expect(response.status == .created, "\(response.text)")
                    let key = try #require(try response.json()["msi_key"]?.stringValue)
                    _ = try await ReceiptTests.post([ReceiptTests.entry(key, "acknowledged")], as: answering, on: hub)

                    try await eventually("the escalation is finished", within: .seconds(90)) {
                        try await Self.stored(key, in: hub.database)[path: "ack.finished_at"] != nil
                    }
                    let message = try await Self.stored(key, in: hub.database)
                    #expect(message["audience_size"]?.int64Value == 2)
                    let id = try #require(message["_id"]?.objectIDValue)
                    let deliveries = try await hub.database.collection(CollectionName.deliveries).find([:])
                    #expect(
                        Set(deliveries.compactMap { $0["_id"]?.stringValue })
                            == ["\(id.hex)/\(answering.id.hex)", "\(id.hex)/\(silent.id.hex)"])
                    #expect(deliveries.allSatisfy { $0["via"] == "topic" && $0["state"] == "sent" })
                    // The silent device got the Alert's two components by token, escalated; the others nothing.
                    let resent = Self.requests(to: silent.token, fake)
                    #expect(resent.count == 2)
                    #expect(resent.allSatisfy { Self.levels($0).android == "HIGH" })
                    #expect(resent.contains { Self.levels($0).apns == "time-sensitive" })
                    #expect(
                        resent.contains { ($0["data"] as? [String: String])?["topic_key"] == ReceiptTests.hoursTopic })
                    #expect(Self.requests(to: answering.token, fake).isEmpty)
                    #expect(Self.requests(to: other.token, fake).isEmpty)
                    try await eventually("the receiver gets message.unacknowledged") { !receiver.accepted.isEmpty }
                    let event = try #require(receiver.accepted.first)
                    #expect(event.valid)
                    #expect(event.body[path: "data.devices"] == .array([.string(silent.id.hex)]))
                    #expect(event.body[path: "data.persons"] == .array(["teacher-3"]))
                }
            }
        }
    }

    @Test func aSampleAskingForAcknowledgementIsCountedAndEscalatedWithinItsSampleOnly() async throws {
        let phones = (0..<8).map { Handset("sample-ack-\($0)", person: "pupil-\($0)") }
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: { database in
                    try await HubHarness.legacy(database)
                    try await ReceiptTests.seed(phones, topics: [ReceiptTests.hoursTopic], in: database)
                }, relay: try FanOutTests.relay(to: fake)
            ) { hub in
                let response = try await hub.request(
                    .post, "/message", as: .communicator,
                    json: #"""
                        {"title": "Survey", "desc": "A few of you", "message": "Did the new timetable reach you?",
                         "topic_key": "\#(ReceiptTests.hoursTopic)", "distribution": "Alert", "sample": 0.5,
                         "cohort": "timetable", "ack": {"within_s": 2, "resend": 1}}
                        """#)
                #expect(response.status == .created, "\(response.text)")
                let key = try #require(try response.json()["msi_key"]?.stringValue)
                // The sample: the devices the first send reached (each by token, one request), once it is sent.
                try await eventually("the message is sent and its audience fixed") {
                    try await Self.stored(key, in: hub.database)[path: "ack.sent_at"] != nil
                }
                let picked = phones.filter { !Self.requests(to: $0.token, fake).isEmpty }
                try #require(!picked.isEmpty && picked.count < phones.count, "the cohort picks some, not all")
                try await eventually("the escalation is finished", within: .seconds(90)) {
                    try await Self.stored(key, in: hub.database)[path: "ack.finished_at"] != nil
                }
                let message = try await Self.stored(key, in: hub.database)
                #expect(message["audience_size"]?.int64Value == Int64(picked.count))
                #expect(message[path: "ack.unacknowledged"]?.int64Value == Int64(picked.count))
                // Nobody answered: each picked device got the message and one re-send as the fan-out sends it (one
                // request, the sample's topic in its data); no device outside the sample got anything.
                for phone in phones {
                    let sent = Self.requests(to: phone.token, fake)
                    if picked.contains(where: { $0.token == phone.token }) {
                        #expect(sent.count == 2, "\(phone.token)")
                        #expect(
                            sent.allSatisfy {
                                ($0["data"] as? [String: String])?["topic_key"] == ReceiptTests.hoursTopic
                            })
                        #expect(sent.last.map { Self.levels($0).android } == "HIGH", "\(phone.token)")
                    } else {
                        #expect(sent.isEmpty, "\(phone.token) is outside the sample")
                    }
                }
            }
        }
    }

    @Test func ackOutsideItsRulesIs422InvalidAckAndStoresNothing() async throws {
        let refused = [
            #""ack": 7"#,
            #""ack": {"within_s": 0}"#,
            #""ack": {"within_s": 604801}"#,
            #""ack": {"within_s": 1.5}"#,
            #""ack": {"within_s": "600"}"#,
            #""ack": {"resend": 2}"#,
            #""ack": {"within_s": 600, "resend": 11}"#,
            #""ack": {"within_s": 600, "resend": -1}"#,
            #""ack": {"within_s": 600, "responses": ["Yes", "Yes"]}"#,
            #""ack": {"within_s": 600, "responses": [""]}"#,
            #""ack": {"within_s": 600, "responses": ["\#(String(repeating: "y", count: 101))"]}"#,
            #""ack": {"within_s": 600, "responses": ["a","b","c","d","e","f","g","h","i","j","k"]}"#,
            #""ack": {"within_s": 600, "responses": "Yes"}"#,
            #""ack": {"within_s": 600, "escalate": true}"#,
        ]
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            for ack in refused {
                let response = try await hub.request(
                    .post, "/message", as: .communicator,
                    json:
                        #"{"title": "Closed", "desc": "Closed today", "message": "-", "topic_key": "\#(ReceiptTests.hoursTopic)", "distribution": "Alert", \#(ack)}"#
                )
                #expect(response.status == .unprocessableContent && response.errorCode == "invalid_ack", "\(ack)")
            }
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)

            // A valid one is stored as asked, part of the request's fingerprint, and not public.
            func send(_ ack: String) async throws -> TestResponse {
                try await hub.client.execute(
                    uri: "/message", method: .post,
                    headers: [
                        .authorization: "Bearer \(HubHarness.communicatorToken)", .contentType: "application/json",
                        .idempotencyKey: "ack-once",
                    ],
                    body: ByteBuffer(
                        string:
                            #"{"title": "Closed", "desc": "Closed today", "message": "-", "topic_key": "\#(ReceiptTests.hoursTopic)", "distribution": "Alert", "ack": \#(ack)}"#
                    ))
            }
            let first = try await send(#"{"within_s": 600, "responses": ["Seen"]}"#)
            #expect(first.status == .created)
            let key = try #require(try first.json()["msi_key"]?.stringValue)
            let stored = try first.json()
            #expect(stored[path: "ack.responses"] == .array(["Seen"]))
            #expect(stored[path: "ack.within_s"]?.int64Value == 600 && stored[path: "ack.resend"]?.int64Value == 0)
            #expect(try await send(#"{"within_s": 600, "responses": ["Seen"]}"#).status == .created)
            let other = try await send(#"{"within_s": 601, "responses": ["Seen"]}"#)
            #expect(other.errorCode == "idempotency_key_reused")
            let anonymous = try await hub.request(.get, "/message/\(key)").json()
            #expect(anonymous["title"] == "Closed" && anonymous["ack"] == nil)
        }
    }
}

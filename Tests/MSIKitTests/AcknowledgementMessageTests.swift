import Foundation
import GRDB
@testable import MSIKit
import Testing

/// A message's urgency and its request for an acknowledgement, in the app: read from a push (`urgency`, `ack`,
/// `ack_responses`) or a catch-up (`urgency`, `ack: {responses, within_s}`), stored, and kept across versions.
@Suite("Urgency and acknowledgement requested, in the app")
struct AcknowledgementMessageTests {
    let client: MSIClient

    /// A client whose hub address has nothing listening, never registered: a payload read from the hub directly
    /// fails with `.network`, one read by a catch-up with `.notRegistered`.
    init() throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        client = try MSIClient(configuration: configuration, push: SilentPush())
    }

    /// A group send's data asking for an acknowledgement, as the hub makes it.
    static func asking(key: String, responses: String? = #"["I'm safe","I need help"]"#) -> [String: String] {
        var payload = [
            "msi_key": key, "dist": "Alert", "title": "Are you safe?", "desc": "Answer now",
            "message": "Tell us you are safe.", "timestamp": "1773151200000", "audience": "group", "group": "class-7b",
            "urgency": "critical", "ack": "1", "room": "r-1",
        ]
        payload["ack_responses"] = responses
        return payload
    }

    @Test func aPushAskingForAnAcknowledgementIsStoredWithItsResponsesAndUrgency() async throws {
        let key = "65f0c0ffee0000000000ac01"
        let received = try #require(try await client.receive(payload: Self.asking(key: key)))
        #expect(received.acknowledgementRequested && received.urgency == .critical)
        #expect(received.acknowledgementResponses == ["I'm safe", "I need help"])
        // The hub's keys are not the sender's data.
        #expect(received.data == ["room": "r-1"])
        let stored = try #require(try await client.store.messages().first)
        #expect(stored == received.message)
        #expect(stored.acknowledgementResponses == ["I'm safe", "I need help"] && stored.urgency == .critical)
    }

    @Test func aPlainAcknowledgementHasNoResponsesAndAMessageWithoutAckAsksNone() async throws {
        let plain = try #require(
            try await client.receive(
                payload: Self.asking(
                    key: "65f0c0ffee0000000000ac02",
                    responses: "[]")))
        #expect(plain.acknowledgementRequested && plain.acknowledgementResponses.isEmpty)

        var ordinary = ListenerTests.dataComponent(key: "65f0c0ffee0000000000ac03", dist: "Information")
        ordinary["urgency"] = "passive"
        let information = try #require(try await client.receive(payload: ordinary))
        #expect(!information.acknowledgementRequested && information.acknowledgementResponses.isEmpty)
        #expect(information.urgency == .passive && information.data.isEmpty)
        // A hub before urgency sent none: the default.
        let older = try #require(
            try await client.receive(
                payload: ListenerTests.dataComponent(key: "65f0c0ffee0000000000ac04", dist: "Information")))
        #expect(older.urgency == .active)
    }

    @Test func aRequestWhoseResponsesDidNotFitIsReadByACatchUpNotStoredWithout() async throws {
        // The hub left ack_responses out to fit FCM's limit, or the pop-up carried only the flag: the device's view
        // on the hub has them, so the listener catches up (here: not registered) rather than store a bare request.
        let payloads = [
            Self.asking(key: "65f0c0ffee0000000000ac05", responses: nil),
            ["msi_key": "65f0c0ffee0000000000ac06", "urgency": "critical", "ack": "1"],
        ]
        for payload in payloads {
            await #expect { try await client.receive(payload: payload) } throws: { error in
                (error as? MSIKitError)?.code == .notRegistered
            }
        }
        #expect(try await client.store.messages().isEmpty)
    }

    @Test func aCatchUpEntryGivesTheResponsesAndUrgency() throws {
        let json = #"""
            {"msi_key": "65f0c0ffee0000000000ac07", "distribution": "Information", "title": "Safe?", "desc": "",
             "message": "Are you safe?", "timestamp": 1773151200000, "urgency": "time-sensitive",
             "ack": {"responses": ["Yes", "No"], "within_s": 600}, "audience": "person"}
            """#
        let message = try JSONDecoder().decode(HubMessage.self, from: Data(json.utf8)).stored
        #expect(message.urgency == .timeSensitive && message.acknowledgementRequested)
        #expect(message.acknowledgementResponses == ["Yes", "No"])

        let plain = #"""
            {"msi_key": "65f0c0ffee0000000000ac08", "topic_key": "a-b-c", "distribution": "Alert", "title": "T",
             "message": "M", "timestamp": 1, "ack": {"within_s": 60}}
            """#
        let bare = try JSONDecoder().decode(HubMessage.self, from: Data(plain.utf8)).stored
        #expect(bare.acknowledgementRequested && bare.acknowledgementResponses.isEmpty && bare.urgency == .active)
    }

    @Test func aStoreOfThePreviousVersionGainsTheColumnsAndKeepsItsMessages() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let previous = try DatabaseQueue(path: path)
        try LocalDatabase.migrator.migrate(previous, upTo: "receipts")
        try await previous.write { db in
            try db.execute(
                sql: """
                    INSERT INTO Message (msi_key, topic_key, dist, title, "desc", message, timestamp)
                    VALUES ('000000000000000000000001', 'a-b-c', 'Information', 'Old', '', 'Old text', 5);
                    """)
        }
        try await previous.close()

        let store = try MessageStore(path: path)
        let old = try #require(try await store.messages().first)
        #expect(old.urgency == .active && !old.acknowledgementRequested && old.acknowledgementResponses.isEmpty)
        let asking = Message(
            msiKey: "000000000000000000000002", topicKey: "", distribution: .alert, title: "Safe?", desc: "Answer",
            text: "Are you safe?", timestamp: 6, audience: .person, urgency: .critical,
            acknowledgementRequested: true, acknowledgementResponses: [#"Yes, "fine""#, "No"])
        #expect(try await store.add(asking))
        let reopened = try MessageStore(path: path)
        #expect(try await reopened.messages() == [asking, old])
        let columns = try await DatabaseQueue(path: path).read { db in
            try Row.fetchOne(
                db, sql: "SELECT urgency, ack, ack_responses FROM Message WHERE msi_key = ?",
                arguments: [asking.msiKey])
        }
        #expect(columns?["urgency"] == "critical" && columns?["ack"] == 1)
        #expect(columns?["ack_responses"] == #"["Yes, \"fine\"","No"]"#)
    }

    @Test func theMessageEncodesItsNewFieldsAndAnOlderEncodingDecodesWithDefaults() throws {
        let asking = Message(
            msiKey: "000000000000000000000005", topicKey: "a-b-c", distribution: .alert, title: "T", desc: "D",
            text: "X", timestamp: 7, urgency: .timeSensitive, acknowledgementRequested: true,
            acknowledgementResponses: ["OK"])
        #expect(try JSONDecoder().decode(Message.self, from: JSONEncoder().encode(asking)) == asking)
        let older = #"""
            {"msiKey": "000000000000000000000006", "topicKey": "a-b-c", "distribution": "Alert", "title": "T",
             "desc": "D", "text": "X", "timestamp": 7}
            """#
        let message = try JSONDecoder().decode(Message.self, from: Data(older.utf8))
        #expect(message.urgency == .active && !message.acknowledgementRequested)
    }

    @Test func eachUrgencyNamesTheHubsDefaultAndroidChannel() {
        #expect(
            [Urgency.passive, .active, .timeSensitive, .critical].map(\.defaultAndroidChannelID)
                == ["msi_passive", "msi_active", "msi_time_sensitive", "msi_critical"])
    }
}

import Foundation
import GRDB
@testable import MSIKit
import Testing

/// Messages to persons and groups: no `topic_key`, an `audience`, the `group` they came through and the sender's
/// `data`, from a push (flat keys beside the hub's) or a catch-up (a `data` object), stored and delivered.
@Suite("Messages to persons and groups, in the app")
struct AudienceMessageTests {
    let client: MSIClient

    /// A client whose hub address has nothing listening: a payload that needed the hub would fail with `.network`.
    init() throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        client = try MSIClient(configuration: configuration, push: SilentPush())
    }

    /// A token send's data as the hub makes it, with FCM's own keys as a phone receives them.
    static func groupPush(key: String) -> [String: String] {
        [
            "msi_key": key, "dist": "Alert", "title": "Chess club", "desc": "Ann: see you at 4",
            "message": "Ann: see you at 4 in room 12", "timestamp": "1773151200000", "audience": "group",
            "group": "chess-club", "room": "r-17", "link": "school://rooms/r-17",
            "from": "1234567890", "collapse_key": "school.app", "google.c.a.e": "1", "gcm.message_id": "0:17",
        ]
    }

    @Test func aGroupPushIsStoredWithItsDataAudienceAndGroup() async throws {
        let key = "65f0c0ffee0000000000d001"
        let received = try #require(try await client.receive(payload: Self.groupPush(key: key)))
        guard case .alert(let title, let body, let message) = received else {
            Issue.record("an Alert must be shown, got \(received)")
            return
        }
        #expect(title == "Chess club" && body == "Ann: see you at 4")
        #expect(message.topicKey == "" && message.audience == .group && message.groupID == "chess-club")
        #expect(message.data == ["room": "r-17", "link": "school://rooms/r-17"])  // FCM's and the hub's keys left out
        #expect(received.data == message.data && received.audience == .group && received.groupID == "chess-club")
        #expect(try await client.store.messages() == [message])
        #expect(try await client.store.messages(groupID: "chess-club") == [message])
        #expect(try await client.store.messages(groupID: "other").isEmpty)
        #expect(try await client.store.messages(channelID: "chess-club").isEmpty)
        #expect(try await client.receive(payload: ["msi_key": key]) == nil)  // the notification component: stored
    }

    @Test func aMutedGroupsAlertIsStoredAndNeverShown() async throws {
        let key = "65f0c0ffee0000000000d00a"
        var payload = Self.groupPush(key: key)
        payload["muted"] = "1"
        let received = try #require(try await client.receive(payload: payload))
        guard case .information(let message) = received else {
            Issue.record("a muted group's Alert must not be shown, got \(received)")
            return
        }
        #expect(message.distribution == .alert && message.data["muted"] == nil)
        #expect(try await client.store.messages(groupID: "chess-club").map(\.msiKey) == [key])
    }

    @Test func aReadOnAnotherDeviceIsReportedWithTheCountAndAnUnknownOneIsNot() async throws {
        let key = "65f0c0ffee0000000000d00b"
        _ = try await client.receive(payload: Self.groupPush(key: key))
        let read = try #require(try await client.receive(payload: ["msi_key": key, "read": "1", "unread": "3"]))
        guard case .read(let message, let unread) = read else {
            Issue.record("a read notice must be reported as read, got \(read)")
            return
        }
        #expect(message.msiKey == key && unread == 3)
        #expect(try await client.receive(payload: ["msi_key": "65f0c0ffee0000000000d00c", "read": "1"]) == nil)
        // The count is the hub's, never the sender's data.
        var counted = Self.groupPush(key: "65f0c0ffee0000000000d00d")
        counted["unread"] = "4"
        #expect(try await client.receive(payload: counted)?.data["unread"] == nil)
    }

    @Test func aPersonalInformationPushWithoutDataIsKept() async throws {
        let key = "65f0c0ffee0000000000d002"
        let payload = [
            "msi_key": key, "dist": "Information", "title": "Fees", "desc": "", "message": "Your fees are due.",
            "timestamp": "1773151200001", "audience": "person",
        ]
        let received = try #require(try await client.receive(payload: payload))
        guard case .information(let message) = received else {
            Issue.record("Information must not be shown, got \(received)")
            return
        }
        #expect(message.audience == .person && message.groupID == nil && message.data.isEmpty)
        #expect(try await client.store.messages().first == message)
    }

    @Test func aPayloadWithNeitherTopicNorAudienceIsReadFromTheHub() async throws {
        var payload = Self.groupPush(key: "65f0c0ffee0000000000d003")
        payload["audience"] = nil
        await #expect { try await client.receive(payload: payload) } throws: { ($0 as? MSIKitError)?.code == .network }
        #expect(try await client.store.messages().isEmpty)
    }

    @Test func aTruncatedPrivateMessageIsCaughtUpNotAskedOfGETMessage() async throws {
        // GET /message/:msiKey shows a private message only to its sender: the device catches up instead, which
        // needs its registration (this client has none; GET /message would have failed with `.network`).
        var payload = Self.groupPush(key: "65f0c0ffee0000000000d006")
        payload["truncated"] = "true"
        await #expect { try await client.receive(payload: payload) } throws: {
            ($0 as? MSIKitError)?.code == .notRegistered
        }
        #expect(try await client.store.messages().isEmpty)
    }

    @Test func aCatchUpMessageCarriesItsDataAsAnObject() throws {
        let json = #"""
            {"msi_key": "65f0c0ffee0000000000d004", "distribution": "Alert", "title": "Invited", "desc": "Open day",
             "message": "You are invited to the open day.", "timestamp": 1773151200002,
             "data": {"event": "open-day", "rsvp": "school://events/open-day"}, "audience": "group", "group": "year-9"}
            """#
        let message = try JSONDecoder().decode(HubMessage.self, from: Data(json.utf8)).stored
        #expect(message.topicKey == "" && message.distribution == .alert)
        #expect(message.data == ["event": "open-day", "rsvp": "school://events/open-day"])
        #expect(message.audience == .group && message.groupID == "year-9")

        let topic = #"""
            {"msi_key": "65f0c0ffee0000000000d005", "topic_key": "a-b-c", "distribution": "Information",
             "title": "T", "message": "M", "timestamp": 1}
            """#
        let legacy = try JSONDecoder().decode(HubMessage.self, from: Data(topic.utf8)).stored
        #expect(legacy.topicKey == "a-b-c" && legacy.data.isEmpty && legacy.audience == nil && legacy.groupID == nil)
    }

    @Test func aStoreTheLegacyAppCreatedGainsTheColumnsAndKeepsItsMessages() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        // The design's table as the legacy app made it, with one message.
        let legacy = try DatabaseQueue(path: path)
        try await legacy.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE Message (
                    ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, msi_key VARCHAR(100), topic_key VARCHAR (100),
                    dist VARCHAR (50), title VARCHAR(500), "desc" VARCHAR(500), message VARCHAR(1500), timestamp INTEGER);
                    INSERT INTO Message (msi_key, topic_key, dist, title, "desc", message, timestamp)
                    VALUES ('000000000000000000000001', 'a-b-c', 'Information', 'Old', '', 'Old text', 5);
                    """)
        }
        try await legacy.close()

        let store = try MessageStore(path: path)
        let old = try #require(try await store.messages().first)
        #expect(old.title == "Old" && old.topicKey == "a-b-c" && old.data.isEmpty && old.audience == nil)
        let personal = Message(
            msiKey: "000000000000000000000002", topicKey: "", distribution: .alert, title: "Seat", desc: "Exam",
            text: "Your exam seat is B12.", timestamp: 6, data: ["seat": "B12", "quote": "\"x\""],
            audience: .person)
        #expect(try await store.add(personal))
        // Read back from the file by a new store: the data is JSON text in the column.
        let reopened = try MessageStore(path: path)
        #expect(try await reopened.messages() == [personal, old])
        let column = try await DatabaseQueue(path: path).read { db in
            try String.fetchOne(db, sql: "SELECT data FROM Message WHERE msi_key = ?", arguments: [personal.msiKey])
        }
        #expect(column == #"{"quote":"\"x\"","seat":"B12"}"#)
    }

    @Test func aMessageEncodedBeforeTheseFieldsStillDecodes() throws {
        let json = #"""
            {"msiKey": "000000000000000000000003", "topicKey": "a-b-c", "distribution": "Alert", "title": "T",
             "desc": "D", "text": "X", "timestamp": 7}
            """#
        let message = try JSONDecoder().decode(Message.self, from: Data(json.utf8))
        #expect(message.data.isEmpty && message.audience == nil && message.groupID == nil)
        let again = Message(
            msiKey: "000000000000000000000004", topicKey: "", distribution: .information, title: "",
            desc: "", text: "", timestamp: 8, data: ["k": "v"], audience: .group, groupID: "g")
        #expect(try JSONDecoder().decode(Message.self, from: JSONEncoder().encode(again)) == again)
    }
}

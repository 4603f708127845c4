import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Messages")
struct MessageDAOTests {
    func draft(_ topic: String, _ title: String = "t", distribution: Distribution = .information) -> MessageDraft {
        MessageDraft(title: title, desc: "", message: "m", topicKey: topic, distribution: distribution, sender: "ann")
    }

    @Test func addStoresTheLegacyFieldsWithANewKeyAndTimestamp() async throws {
        try await TestDatabase.with { database in
            let clock = ManualClock()
            let dao = MessageDAO(database: database, now: clock.now)
            let added = try await dao.add(
                MessageDraft(
                    title: "Closed", desc: "Library closed", message: "All day",
                    topicKey: "a-b-c", distribution: .alert, sender: "ann",
                    extra: ["relay": ["state": "pending"]]))
            let raw = try #require(try await database.collection(CollectionName.message).findOne([:]))
            #expect(
                raw == [
                    "_id": .objectID(added.id), "msi_key": .objectID(added.msiKey), "title": "Closed",
                    "desc": "Library closed",
                    "message": "All day", "topic_key": "a-b-c", "distribution": "Alert", "urgency": "active",
                    "sender": "ann",
                    "timestamp": .int64(1_700_000_000_000), "relay": ["state": "pending"],
                ])
            let fetched = try await dao.get(msiKey: added.msiKey)
            #expect(fetched.title == "Closed" && fetched.timestamp == 1_700_000_000_000)
            let error = await #expect(throws: DAOError.self) { try await dao.get(msiKey: ObjectID()) }
            #expect(error?.code == .messageNotFound)
        }
    }

    @Test func realClockStampsMilliseconds() async throws {
        try await TestDatabase.with { database in
            let message = try await MessageDAO(database: database).add(draft("x"))
            #expect(message.timestamp > 1_700_000_000_000 && message.timestamp < 4_000_000_000_000)
        }
    }

    @Test func pagesAreNewestFirstFilteredByTopicAndTime() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let clock = ManualClock()
            let dao = MessageDAO(database: database, now: clock.now)
            var added: [Message] = []
            for index in 0..<9 {
                added.append(try await dao.add(draft(["a", "b", "c"][index % 3], "m\(index)")))
                clock.advance(1_000)
            }
            let ab = try await dao.page(MessageQuery(topicKeys: ["a", "b"], limit: 10))
            #expect(ab.messages.map(\.title) == ["m7", "m6", "m4", "m3", "m1", "m0"])
            #expect(ab.next == nil)
            let recent = try await dao.page(MessageQuery(topicKeys: ["a"], since: added[3].timestamp, limit: 10))
            #expect(recent.messages.map(\.title) == ["m6", "m3"])
            let all = try await dao.page(MessageQuery(limit: 100))
            #expect(all.messages.count == 9)
        }
    }

    @Test func cursorsStayStableWhileNewMessagesArrive() async throws {
        try await TestDatabase.with { database in
            let clock = ManualClock()
            let dao = MessageDAO(database: database, now: clock.now)
            // Several messages share a millisecond: the _id breaks the tie.
            for index in 0..<7 {
                _ = try await dao.add(draft("a", "m\(index)"))
                if index % 2 == 1 { clock.advance(1) }
            }
            let first = try await dao.page(MessageQuery(topicKeys: ["a"], limit: 3))
            #expect(first.messages.map(\.title) == ["m6", "m5", "m4"])
            let cursor = try #require(first.next)
            #expect(MessageCursor(token: cursor.token) == cursor)
            #expect(MessageCursor(token: "garbage") == nil)

            clock.advance(10)
            _ = try await dao.add(draft("a", "new"))

            let second = try await dao.page(MessageQuery(topicKeys: ["a"], limit: 3, after: cursor))
            #expect(second.messages.map(\.title) == ["m3", "m2", "m1"])
            let secondCursor: MessageCursor = try #require(second.next)
            let third = try await dao.page(MessageQuery(topicKeys: ["a"], limit: 3, after: secondCursor))
            #expect(third.messages.map(\.title) == ["m0"])
            #expect(third.next == nil)
        }
    }

    @Test func indexesAreCreatedIdempotentlyAndMsiKeysAreUnique() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            try await DatabaseIndexes.ensure(in: database)
            let messages = database.collection(CollectionName.message)
            let key = ObjectID()
            try await messages.insertOne(["msi_key": .objectID(key)])
            let error = await #expect(throws: MongoError.self) {
                try await messages.insertOne(["msi_key": .objectID(key)])
            }
            #expect(error?.code == .duplicateKey)
        }
    }
}

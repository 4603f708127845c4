import DAO
import Mongo
import MongoTestSupport
import Testing

/// `MessageDAO.catchUp`: what a device that was off receives, page by page, and the plan that serves it.
@Suite("Catch-up query")
struct CatchUpQueryTests {
    static let now: Int64 = 1_800_000_000_000

    /// A stored message on `topic` at `timestamp`, with a `relay` sub-document when `relay` is given.
    @discardableResult
    static func insert(
        _ database: MongoDatabase, _ title: String, topic: String, at timestamp: Int64,
        id: ObjectID = ObjectID(), relay: BSONDocument? = ["state": "sent"]
    ) async throws -> ObjectID {
        var document: BSONDocument = [
            "_id": .objectID(id), "msi_key": .objectID(ObjectID()), "title": .string(title), "desc": "", "message": "m",
            "topic_key": .string(topic), "distribution": "Information", "sender": "ann", "timestamp": .int64(timestamp),
        ]
        if let relay { document["relay"] = .document(relay) }
        _ = try await database.collection(CollectionName.message).insertOne(document)
        return id
    }

    /// Every page of a catch-up, `limit` at a time.
    static func all(_ dao: MessageDAO, topics: [String], since: Int64, limit: Int) async throws -> [[String]] {
        var pages: [[String]] = []
        var after: MessageCursor?
        repeat {
            let page = try await dao.catchUp(
                CatchUpQuery(topicKeys: topics, since: since, limit: limit, after: after, now: now))
            pages.append(page.messages.map(\.title))
            after = page.next
        } while after != nil
        return pages
    }

    @Test func oldestFirstFromSinceInclusiveWithoutExpiredOrUnscheduledOrOtherTopics() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let t = Self.now - 60_000
            try await Self.insert(database, "before", topic: "a", at: t - 1)
            try await Self.insert(database, "at-since", topic: "a", at: t)
            try await Self.insert(database, "legacy", topic: "b", at: t + 1, relay: nil)
            try await Self.insert(
                database, "expired", topic: "a", at: t + 2, relay: ["state": "sent", "expires_at": .int64(Self.now)])
            try await Self.insert(
                database, "ttl-left", topic: "b", at: t + 3,
                relay: ["state": "sent", "expires_at": .int64(Self.now + 1), "ttl": 60])
            try await Self.insert(
                database, "scheduled", topic: "a", at: t + 4,
                relay: ["state": "pending", "due_at": .int64(Self.now + 1), "send_at": .int64(Self.now + 1)])
            try await Self.insert(
                database, "due", topic: "a", at: t + 5,
                relay: ["state": "pending", "due_at": .int64(Self.now), "send_at": .int64(Self.now)])
            try await Self.insert(database, "other-topic", topic: "c", at: t + 6)
            // FCM asked to wait: its retry is later, but the phone that catches up gets it now.
            try await Self.insert(
                database, "retried", topic: "a", at: t + 7,
                relay: ["state": "pending", "due_at": .int64(Self.now + 60_000)])
            let dao = MessageDAO(database: database)
            #expect(
                try await Self.all(dao, topics: ["a", "b"], since: t, limit: 200)
                    == [["at-since", "legacy", "ttl-left", "due", "retried"]])
            #expect(try await Self.all(dao, topics: [], since: 0, limit: 200) == [[]])
        }
    }

    @Test func pagesSplitInsideOneMillisecondLoseAndRepeatNothing() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // Seven messages in one millisecond, inserted out of `_id` order, and two later ones.
            let ids = (0..<7).map { _ in ObjectID() }
            for index in [3, 0, 6, 1, 5, 2, 4] {
                try await Self.insert(
                    database, "same-\(index)", topic: index % 2 == 0 ? "a" : "b", at: Self.now - 10, id: ids[index])
            }
            try await Self.insert(database, "later-0", topic: "b", at: Self.now - 5)
            try await Self.insert(database, "later-1", topic: "a", at: Self.now - 1)
            let pages = try await Self.all(MessageDAO(database: database), topics: ["a", "b"], since: 0, limit: 3)
            #expect(
                pages == [
                    ["same-0", "same-1", "same-2"], ["same-3", "same-4", "same-5"], ["same-6", "later-0", "later-1"],
                ])
        }
    }

    /// The plan of a catch-up of 50 subscriptions: one query. On MongoDB it runs on the `topic_key.timestamp` index,
    /// one backward scan per topic merged in order (SORT_MERGE), with no blocking sort. SecantusDB, the test server,
    /// plans an index only for a filter of one field (or equalities and one range on a compound index), so it scans
    /// the collection and sorts: the plan is checked for MongoDB's shape only when the server is MongoDB.
    @Test func aCatchUpOfFiftySubscriptionsIsOneQueryOnTheTopicTimestampIndex() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let topics = (0..<50).map { "topic-\($0)" }
            for (index, topic) in topics.enumerated() {
                try await Self.insert(database, "m\(index)", topic: topic, at: Self.now - Int64(index))
            }
            let query = CatchUpQuery(topicKeys: topics, since: 0, limit: 200, now: Self.now)
            let plan = try await database.runCommand([
                "explain": [
                    "find": .string(CollectionName.message), "filter": .document(MessageDAO.catchUpFilter(query)),
                    "sort": ["timestamp": 1, "_id": 1], "limit": 201,
                ],
                "verbosity": "queryPlanner",
            ])
            let winning = try #require(plan[path: "queryPlanner.winningPlan"]?.documentValue)
            let text = LegacyJSONWriter().string(winning)
            print("catch-up plan (50 topics): \(text)")
            let server = try await database.runCommand(["buildInfo": 1])
            if server["secantusVersion"] == nil {
                #expect(text.contains("\"indexName\":\"topic_key.timestamp\""))
                #expect(text.contains("SORT_MERGE") && !text.contains("\"stage\":\"SORT\""))
            } else {
                // One command whatever the number of topics: every topic is in the one plan's filter.
                #expect(topics.allSatisfy { text.contains("\"\($0)\"") })
            }
            let page = try await MessageDAO(database: database).catchUp(query)
            #expect(page.messages.count == 50 && page.messages.first?.title == "m49" && page.next == nil)
        }
    }
}

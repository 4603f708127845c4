@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// `MessageDAO.activeBanners`: banners enter their queue as they are stored, and the list reads those messages alone.
@Suite("Banner query")
struct BannerQueryTests {
    @Test func aBannerEntersItsQueueAtItsInsertAndTheListReadsTheQueuesMessagesAlone() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let now: Int64 = 1_800_000_000_000
            let dao = MessageDAO(database: database, now: { now - 1_000 })
            _ = try await database.collection(CollectionName.message).insertMany(
                (0..<300).map { index in
                    [
                        "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "topic_key": "a",
                        "timestamp": .int64(now - Int64(index)),
                    ]
                })
            var stored: [Message] = []
            for banner in [true, false] {
                var document: BSONDocument = [
                    "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "topic_key": "a",
                    "timestamp": .int64(now - 1_000),
                ]
                if banner { document["banner"] = true }
                stored.append(try await dao.add(document: document))
            }
            let queues = MessageQueueDAO(database: database)
            #expect(try await queues.members(of: .banner) == [.objectID(stored[0].msiKey)])
            let entry = try #require(
                try await database.collection(CollectionName.messageQueues).findOne(["q": "banner"]))
            // A banner without an expiry leaves its queue a grace after its 28 days.
            #expect(
                entry["expire_at"]
                    == .datetime(
                        now - 1_000 + MessageDAO.bannerLifetimeWithoutExpiryMS + MessageQueueDAO.graceMS))

            let query = BannerQuery(topicKeys: ["a", "b"], now: now, storedSince: now - 100 * 86_400_000, limit: 20)
            let filter = try #require(try await queues.filter(MessageDAO.bannerFilter(query), in: .banner))
            // The server finds the queue's messages by their `msi_key`s, then applies the rest of the filter (its
            // `explain` models a filter of several fields as a scan, though it runs it on the first field's index).
            #expect(filter.elements.first?.key == "msi_key")
            let plan = try await database.runCommand([
                "explain": [
                    "find": .string(CollectionName.message), "filter": ["msi_key": filter["msi_key"]!], "limit": 20,
                ],
                "verbosity": "executionStats",
            ])
            let examined = try #require(plan[path: "executionStats.totalDocsExamined"]?.int64Value)
            #expect(examined <= 1, "the list examined \(examined) documents")
            #expect(try await dao.activeBanners(query).map(\.msiKey) == [stored[0].msiKey])

            // Withdrawn: out of its queue, and off the list.
            #expect(
                try await dao.withdraw(
                    msiKey: stored[0].msiKey, expected: nil, at: now, by: "admin", reason: nil, cancel: false,
                    notice: nil))
            #expect(try await queues.members(of: .banner).isEmpty)
            #expect(try await dao.activeBanners(query).isEmpty)
        }
    }
}

import DAO
import Mongo
import MongoTestSupport
import Testing

/// `MessageDAO.activeBanners`: its index holds banners only, and the list runs on it.
@Suite("Banner query")
struct BannerQueryTests {
    @Test func theBannerIndexHoldsOnlyBannersAndServesTheList() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let listed = try await database.runCommand(["listIndexes": .string(CollectionName.message)])
            let indexes = listed[path: "cursor.firstBatch"]?.arrayValue?.compactMap(\.documentValue) ?? []
            let banner = try #require(indexes.first { $0["name"]?.stringValue == MessageDAO.bannerIndex.name })
            // Partial, not sparse: a sparse compound index holds every document with any of its fields (a timestamp).
            #expect(banner["partialFilterExpression"]?.documentValue == ["banner": true])
            #expect(banner["sparse"] == nil)

            let now: Int64 = 1_800_000_000_000
            let query = BannerQuery(topicKeys: ["a", "b"], now: now, storedSince: now - 100 * 86_400_000, limit: 20)
            let plan = try await database.runCommand([
                "explain": [
                    "find": .string(CollectionName.message), "filter": .document(MessageDAO.bannerFilter(query)),
                    "sort": ["timestamp": -1, "_id": -1], "limit": 20,
                ],
                "verbosity": "queryPlanner",
            ])
            let winning = try #require(plan[path: "queryPlanner.winningPlan"]?.documentValue)
            let server = try await database.runCommand(["buildInfo": 1])
            if server["secantusVersion"] == nil {
                #expect(LegacyJSONWriter().string(winning).contains("\"indexName\":\"banner.timestamp\""))
            } else {
                // SecantusDB plans an index for simple filters only (see the catch-up query's test); what its index
                // holds is read through a hint: the banner, not the other message.
                let messages = database.collection(CollectionName.message)
                for banner in [true, false] {
                    var document: BSONDocument = [
                        "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "topic_key": "a",
                        "timestamp": .int64(now - 1_000),
                    ]
                    if banner { document["banner"] = true }
                    _ = try await messages.insertOne(document)
                }
                let found = try await database.runCommand([
                    "find": .string(CollectionName.message), "filter": [:], "hint": "banner.timestamp",
                ])
                #expect(found[path: "cursor.firstBatch"]?.arrayValue?.count == 1)
            }
        }
    }
}

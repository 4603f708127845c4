@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// What expires is removed by the hub's sweep, a range of each collection's expiry index, never by a TTL index (which
/// the embedded database answers by reading the whole collection every minute, holding its lock).
@Suite("Expiry sweep")
struct ExpirySweepTests {
    @Test func theStartReplacesTheTTLIndexesAndTheSweepRemovesWhatExpiredAlone() async throws {
        try await TestDatabase.with { database in
            // A hub that ran the earlier versions: TTL indexes on the used assertions and the idempotency keys.
            let assertions = database.collection(CollectionName.usedAssertions)
            let keys = database.collection(CollectionName.idempotencyKeys)
            try await assertions.createIndexes([
                IndexModel(keys: ["expire_at": 1], name: "expire_at", expireAfterSeconds: 0)
            ])
            try await keys.createIndexes([
                IndexModel(keys: ["created_at": 1], name: "created_at", expireAfterSeconds: 86_400)
            ])
            try await DatabaseIndexes.ensure(in: database)
            for expiring in ExpiringCollections.all {
                let listed = try await database.runCommand(["listIndexes": .string(expiring.collection)])
                let indexes = (listed[path: "cursor.firstBatch"]?.arrayValue ?? []).compactMap(\.documentValue)
                #expect(
                    indexes.allSatisfy { $0["expireAfterSeconds"] == nil },
                    "\(expiring.collection) keeps no TTL index")
                #expect(
                    indexes.contains { $0["name"]?.stringValue == expiring.index.name },
                    "\(expiring.collection) has its expiry index")
            }

            let now: Int64 = 1_800_000_000_000
            _ = try await assertions.insertMany(
                (0..<300).map { ["_id": .string("live-\($0)"), "expire_at": .datetime(now + 60_000)] }
                    + (0..<2).map { ["_id": .string("used-\($0)"), "expire_at": .datetime(now - 1)] })
            let day: Int64 = 86_400_000
            _ = try await keys.insertMany([
                ["_id": "yesterday's", "created_at": .datetime(now - day - 1)],
                ["_id": "this morning's", "created_at": .datetime(now - day / 2)],
            ])
            // The sweep's read of what expired examines those documents alone, not the collection.
            let examined = try await ClaimQueryTests.examined(
                UsedAssertionDAO.expiry.expired(at: now), sort: ["expire_at": 1],
                on: CollectionName.usedAssertions, in: database)
            #expect(examined <= 2, "the sweep's range examined \(examined) documents")

            let sweep = ExpirySweepDAO(database: database, now: { now })
            #expect(try await sweep.sweep() == 3)
            #expect(try await assertions.countDocuments([:]) == 300)
            #expect(try await keys.countDocuments([:]) == 1)
            #expect(try await keys.findOne(["_id": "this morning's"]) != nil)
            #expect(try await sweep.sweep() == 0, "nothing the second time")
        }
    }
}

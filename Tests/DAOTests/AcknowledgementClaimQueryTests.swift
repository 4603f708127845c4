@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// The escalation worker's claim, made every second by every replica: it reads the messages with an escalation to
/// come through its index, never the archive (a scan of every message a second grew with the archive, and was most
/// of the database's work in a long-running hub).
@Suite("Acknowledgement claim query")
struct AcknowledgementClaimQueryTests {
    @Test func theClaimsReadIsOnItsIndexAndTheFirstIndexIsRetired() async throws {
        try await TestDatabase.with { database in
            let messages = database.collection(CollectionName.message)
            // A hub that ran the first version: its index is dropped at start.
            try await messages.createIndexes([IndexModel(keys: ["ack.next_at": 1], name: "ack.next_at",
                                                         partialFilter: ["ack.next_at": ["$exists": true]])])
            try await DatabaseIndexes.ensure(in: database)
            let listed = try await database.runCommand(["listIndexes": .string(CollectionName.message)])
            let names = (listed[path: "cursor.firstBatch"]?.arrayValue ?? []).compactMap { $0.documentValue?["name"]?.stringValue }
            #expect(names.contains(AcknowledgementDAO.index.name) && !names.contains("ack.next_at"))

            let now: Int64 = 1_800_000_000_000
            _ = try await messages.insertMany((0..<300).map { index in
                ["_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "timestamp": .int64(now - Int64(index))]
            })
            let due: BSONDocument = ["_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                                     "ack": ["next_at": .int64(now - 10)]]
            _ = try await messages.insertMany([due, ["_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                                                     "ack": ["next_at": .int64(now + 60_000)]]])
            let plan = try await database.runCommand([
                "explain": ["find": .string(CollectionName.message), "filter": ["ack.next_at": AcknowledgementDAO.due(now)],
                            "sort": ["ack.next_at": 1], "limit": 1],
                "verbosity": "executionStats",
            ])
            #expect(plan[path: "executionStats.nReturned"]?.int64Value == 1)
            let examined = try #require(plan[path: "executionStats.totalDocsExamined"]?.int64Value)
            #expect(examined <= 2, "the claim examined \(examined) documents")

            let claimed = try await AcknowledgementDAO(database: database, now: { now }).claim(owner: "test", leaseMS: 1_000)
            #expect(claimed == nil)  // not an escalation this hub can read: taken off the index
            #expect(try await messages.findOne(["_id": due["_id"]!])?[path: "ack.next_at"] == nil)
        }
    }
}

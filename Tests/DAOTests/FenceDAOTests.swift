import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Fences on the change stream")
struct FenceDAOTests {
    @Test func aProcessSeesItsOwnFencesInOrderAndNoOneElses() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let mine = FenceDAO(database: database)
            let theirs = FenceDAO(database: database)
            let stream = try await database.watch(
                pipeline: [mine.changeFilter(collections: [CollectionName.icube])],
                maxAwaitTimeMS: 200)
            try await theirs.write(1)
            try await mine.write(1)  // an insert (upsert) ...
            try await database.collection(CollectionName.icube).insertOne(["name": "after the fence"])
            try await database.collection(CollectionName.message).insertOne(["title": "not followed"])
            try await mine.write(2)  // ... then updates
            var seen: [String] = []
            for _ in 0..<20 where seen.count < 3 {
                guard let change = try await stream.next() else { continue }
                #expect(theirs.fenceNumber(in: change) == nil)
                if let number = mine.fenceNumber(in: change) {
                    seen.append("fence \(number)")
                } else {
                    seen.append(change[path: "ns.coll"]?.stringValue ?? "?")
                }
            }
            await stream.close()
            #expect(seen == ["fence 1", CollectionName.icube, "fence 2"])
        }
    }
}

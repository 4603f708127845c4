import Mongo
import MongoTestSupport
import Testing

@Suite("Change streams")
struct ChangeStreamTests {
    @Test func aClosedStreamSaysItIsClosedRatherThanThatTheCallerWasCancelled() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("closed_stream")
            try await collection.insertOne(["seed": true])  // the collection must exist
            let stream = try await collection.watch(maxAwaitTimeMS: 200)
            await stream.close()
            let error = await #expect(throws: MongoError.self) { try await stream.next() }
            #expect(error?.code == .cursor)
        }
    }
}

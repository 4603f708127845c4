import Mongo
import Synchronization
import MongoTestSupport
import Testing

@Suite("Concurrent inserts sharing commands")
struct InsertBatcherTests {
    @Test func concurrentInsertsGatherIntoFewCommandsAndEachIsStored() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("gathered")
            let batcher = InsertBatcher(collection: collection, maximumBatch: 16, maximumInFlight: 1)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<100 {
                    group.addTask { try await batcher.insert(["i": .int32(Int32(index))]) }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.countDocuments() == 100)
            for index in [0, 57, 99] {
                #expect(try await collection.countDocuments(["i": .int32(Int32(index))]) == 1)
            }
            // With one command at a time, those that arrive meanwhile share the next one.
            #expect(batcher.commandsSent < 100)
            #expect(batcher.commandsSent >= 100 / 16)
        }
    }

    @Test func aLoneInsertIsSentAtOnceAndItsErrorReachesItsCaller() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("alone")
            let batcher = InsertBatcher(collection: collection)
            let id = ObjectID()
            try await batcher.insert(["_id": .objectID(id), "v": 1])
            #expect(batcher.commandsSent == 1)
            await #expect(throws: MongoError.self) {
                try await batcher.insert(["_id": .objectID(id), "v": 2])
            }
            #expect(try await collection.findOne(["_id": .objectID(id)])?["v"] == 1)
        }
    }

    @Test func whenASharedCommandFailsEachCallerLearnsItsOwnOutcome() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("mixed")
            let taken = ObjectID()
            try await collection.insertOne(["_id": .objectID(taken), "owner": "earlier"])
            let batcher = InsertBatcher(collection: collection, maximumBatch: 64, maximumInFlight: 1)
            // Many concurrent inserts, one of which reuses a stored _id: it alone fails.
            let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let id = index == 20 ? taken : ObjectID()
                        do {
                            try await batcher.insert(["_id": .objectID(id), "i": .int32(Int32(index))])
                            return (index, true)
                        } catch let error as MongoError {
                            #expect(error.code == .duplicateKey)
                            return (index, false)
                        }
                    }
                }
                var outcomes: [Int: Bool] = [:]
                for try await (index, stored) in group { outcomes[index] = stored }
                return outcomes
            }
            #expect(outcomes.count == 40)
            #expect(outcomes.filter { !$0.value }.map(\.key) == [20])
            #expect(try await collection.countDocuments() == 40)
            #expect(try await collection.findOne(["_id": .objectID(taken)])?["owner"] == "earlier")
        }
    }

    @Test func withADeadlineAStoredDocumentUnderTheSameIDIsThisOneStoredOnce() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("settled")
            let batcher = InsertBatcher(collection: collection)
            let document: BSONDocument = ["_id": .objectID(ObjectID()), "v": 1]
            try await batcher.insert(document, deadline: .now.advanced(by: .seconds(5)))
            // Changed since by someone else, then inserted again (a retry): stored, once, as it is now.
            try await collection.updateOne(["_id": document["_id"]!], ["$set": ["v": 2]])
            try await batcher.insert(document, deadline: .now.advanced(by: .seconds(5)))
            #expect(try await collection.countDocuments() == 1)
            #expect(try await collection.findOne([:])?["v"] == 2)
        }
    }

    @Test func aDeadlineEndsTheWaitNotTheOperation() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let finished = Flag()
        await #expect {
            try await withDeadline(.now.advanced(by: .milliseconds(200))) {
                try await Task.sleep(for: .seconds(8))
                finished.set(true)
            }
        } throws: { ($0 as? MongoError)?.code == .deadlineExceeded }
        // Far below the operation's 8 s, with room for a loaded machine's late timers.
        #expect(clock.now - started < .seconds(6))
        #expect(!finished.isSet)
        for _ in 0..<100 where !finished.isSet { try await Task.sleep(for: .milliseconds(200)) }
        #expect(finished.isSet)
        // A deadline already past starts nothing.
        await #expect {
            try await withDeadline(.now.advanced(by: .milliseconds(-1))) { finished.set(false) }
        } throws: { ($0 as? MongoError)?.code == .notAttempted }
        #expect(finished.isSet)
    }
}

/// A flag tasks share.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set(_ newValue: Bool) { value.store(newValue, ordering: .relaxed) }
}

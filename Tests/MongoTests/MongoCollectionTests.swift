import Mongo
import MongoTestSupport
import Testing

@Suite("Collections against the test database")
struct MongoCollectionTests {
    @Test func insertFindUpdateDeleteRoundTrip() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("things")
            let id = try await collection.insertOne(["name": "a", "n": 1])
            #expect(id.objectIDValue != nil)
            try await collection.insertMany([["name": "b", "n": 2], ["name": "c", "n": 3]])
            #expect(try await collection.countDocuments() == 3)
            #expect(try await collection.countDocuments(["n": ["$gte": 2]]) == 2)

            let sorted = try await collection.find(
                [:], options: FindOptions(projection: ["name": 1, "_id": 0], sort: ["n": -1], skip: 1, limit: 1))
            #expect(sorted == [["name": "b"]])
            #expect(try await collection.findOne(["name": "c"])?["n"] == 3)
            #expect(try await collection.findOne(["name": "zzz"]) == nil)

            let updated = try await collection.updateOne(["name": "a"], ["$set": ["n": 10]])
            #expect(updated.matchedCount == 1 && updated.modifiedCount == 1)
            let many = try await collection.updateMany([:], ["$inc": ["n": 1]])
            #expect(many.matchedCount == 3)
            let upsert = try await collection.updateOne(
                ["name": "d"], ["$set": ["n": 4]], options: UpdateOptions(upsert: true))
            #expect(upsert.matchedCount == 0 && upsert.upsertedID != nil)

            #expect(try await collection.deleteOne(["name": "a"]) == 1)
            #expect(try await collection.deleteMany(["n": ["$lt": 100]]) == 3)
            #expect(try await collection.countDocuments() == 0)
        }
    }

    @Test func bulkUpdateAppliesManyStatementsInOneCommand() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("bulk")
            try await collection.insertMany((0..<10).map { ["i": .int32(Int32($0)), "tag": "old"] })
            var statements = (0..<5).map { index in
                UpdateStatement(filter: ["i": .int32(Int32(index))], update: ["$set": ["tag": .string("new \(index)")]])
            }
            statements.append(
                UpdateStatement(filter: ["i": ["$gte": 8]], update: ["$set": ["tag": "high"]], many: true))
            statements.append(UpdateStatement(filter: ["i": 99], update: ["$set": ["tag": "none"]]))
            let result = try await collection.bulkUpdate(statements)
            #expect(result.matchedCount == 7 && result.modifiedCount == 7)
            #expect(try await collection.findOne(["i": 3])?["tag"] == "new 3")
            #expect(try await collection.countDocuments(["tag": "high"]) == 2)
            #expect(try await collection.countDocuments(["tag": "old"]) == 3)
            #expect(try await collection.bulkUpdate([]).matchedCount == 0)
            // A statement the server refuses fails the call with a mapped error.
            await #expect(throws: MongoError.self) {
                try await collection.bulkUpdate([UpdateStatement(filter: ["i": 1], update: ["$bogus": ["tag": 1]])])
            }
        }
    }

    @Test func findHonoursBatchSizeAcrossManyBatches() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("many")
            try await collection.insertMany((0..<250).map { ["i": .int32(Int32($0))] })
            let all = try await collection.find([:], options: FindOptions(sort: ["i": 1], batchSize: 7))
            #expect(all.count == 250)
            #expect(all.last?["i"] == 249)
        }
    }

    @Test func arrayFiltersUpdateOnlyTheNamedElement() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("nested")
            try await collection.insertOne([
                "_id": 1,
                "areas": [
                    ["id": 1, "subjects": [["id": 1, "name": "x", "keep": true], ["id": 2, "name": "y"]]],
                    ["id": 2, "subjects": [["id": 1, "name": "z"]]],
                ],
            ])
            let result = try await collection.updateOne(
                ["_id": 1], ["$set": ["areas.$[a].subjects.$[s].name": "changed"]],
                options: UpdateOptions(arrayFilters: [["a.id": 1], ["s.id": 1]]))
            #expect(result.modifiedCount == 1)
            let document = try #require(try await collection.findOne(["_id": 1]))
            #expect(
                document == [
                    "_id": 1,
                    "areas": [
                        ["id": 1, "subjects": [["id": 1, "name": "changed", "keep": true], ["id": 2, "name": "y"]]],
                        ["id": 2, "subjects": [["id": 1, "name": "z"]]],
                    ],
                ])
        }
    }

    @Test func findOneAndUpdateReturnsTheDocumentBeforeOrAfter() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("fam")
            try await collection.insertMany([
                ["_id": 1, "state": "pending", "n": 1], ["_id": 2, "state": "pending", "n": 2],
            ])
            let claimed = try await collection.findOneAndUpdate(
                ["state": "pending"], ["$set": ["state": "claimed"]],
                options: FindOneAndUpdateOptions(returnNew: true, sort: ["n": -1]))
            #expect(claimed?["_id"] == 2)
            #expect(claimed?["state"] == "claimed")
            let before = try await collection.findOneAndUpdate(
                ["_id": 1], ["$set": ["state": "done"]], options: FindOneAndUpdateOptions(returnNew: false))
            #expect(before?["state"] == "pending")
            #expect(try await collection.findOneAndUpdate(["_id": 3], ["$set": ["x": 1]]) == nil)
            let upserted = try await collection.findOneAndUpdate(
                ["_id": 3], ["$set": ["x": 1]], options: FindOneAndUpdateOptions(upsert: true))
            #expect(upserted == ["_id": 3, "x": 1])
        }
    }

    @Test func uniqueIndexesRefuseDuplicatesWithASwitchableCode() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("unique")
            let index = IndexModel(keys: ["key": 1], name: "key", unique: true)
            try await collection.createIndexes([index])
            try await collection.createIndexes([index])  // idempotent
            try await collection.insertOne(["key": "a"])
            let error = await #expect(throws: MongoError.self) { try await collection.insertOne(["key": "a"]) }
            #expect(error?.code == .duplicateKey)
            #expect(error?.isUnavailable == false)
            #expect(error.map { !$0.description.contains("\"a\"") } == true)
        }
    }

    @Test func aggregateRunsAPipeline() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("agg")
            try await collection.insertMany([["g": "x", "n": 1], ["g": "x", "n": 2], ["g": "y", "n": 5]])
            let groups = try await collection.aggregate([
                ["$group": ["_id": "$g", "total": ["$sum": "$n"]]],
                ["$sort": ["_id": 1]],
            ])
            #expect(groups.map { $0["total"]?.int64Value } == [3, 5])
        }
    }

    @Test func changeStreamSeesAnotherWritersInsert() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("watched")
            try await collection.insertOne(["seed": true])  // the collection must exist
            let stream = try await collection.watch(maxAwaitTimeMS: 200)
            try await collection.insertOne(["_id": "new", "value": 1])
            var change: BSONDocument?
            for _ in 0..<25 where change == nil {
                change = try await stream.next()
            }
            await stream.close()
            #expect(change?["operationType"] == "insert")
            #expect(change?[path: "documentKey._id"] == "new")
        }
    }

    @Test func aDatabaseChangeStreamSeesOnlyTheCollectionsItIsNarrowedTo() async throws {
        try await TestDatabase.with { database in
            try await database.collection("followed").insertOne(["seed": true])
            try await database.collection("ignored").insertOne(["seed": true])
            let stream = try await database.watch(
                pipeline: [["$match": ["ns.coll": ["$in": ["followed"]]]]], maxAwaitTimeMS: 200)
            try await database.collection("ignored").insertOne(["_id": "skip"])
            try await database.collection("followed").insertOne(["_id": "seen"])
            var changes: [BSONDocument] = []
            for _ in 0..<15 {
                if let change = try await stream.next() { changes.append(change) } else if !changes.isEmpty { break }
            }
            await stream.close()
            #expect(changes.map { $0[path: "documentKey._id"] } == ["seen"])
            #expect(changes.first?[path: "ns.coll"] == "followed")
            await #expect(throws: (any Error).self) { try await stream.next() }
        }
    }

    @Test func aStreamNarrowedToAQuietCollectionAsksAFewTimesASecondWhileAnotherIsBusy() async throws {
        try await TestDatabase.with { database in
            try await database.collection("quiet").insertOne(["seed": true])
            let busy = database.collection("busy")
            let stream = try await database.watch(pipeline: [["$match": ["ns.coll": "quiet"]]], maxAwaitTimeMS: 1_000)
            let started = ContinuousClock.now
            // The server answers a waiting poll on every write; each early empty answer is followed by a pause,
            // so the polls follow the clock, not the 100 writes.
            let polls = try await withThrowingTaskGroup(of: Int?.self) { group in
                group.addTask {
                    for count in 0..<100 { try await busy.insertOne(["n": .int64(Int64(count))]) }
                    return nil
                }
                group.addTask {
                    var polls = 0
                    while !Task.isCancelled {
                        _ = try await stream.next()
                        polls += 1
                    }
                    return polls
                }
                _ = try await group.next()  // the writes are done
                group.cancelAll()
                return try await group.next() ?? nil
            }
            let elapsed = ContinuousClock.now - started
            await stream.close()
            let bound = Int(elapsed / ChangeStream.earlyEmptyPause) + 3
            let counted = try #require(polls)
            #expect(counted <= bound, "\(counted) polls in \(elapsed) while 100 writes were made elsewhere")
        }
    }

    @Test func pingAndCommandsAndCollectionNames() async throws {
        try await TestDatabase.sharedPool().ping()
        try await TestDatabase.with { database in
            try await database.collection("one").insertOne(["a": 1])
            #expect(try await database.collectionNames().contains("one"))
            try await database.collection("one").drop()
            try await database.collection("one").drop()  // dropping a missing collection is fine
            #expect(try await !database.collectionNames().contains("one"))
        }
    }

    @Test func anUnreachableServerFailsFastAsUnavailable() async throws {
        let pool = try MongoClientPool(
            configuration: MongoConfiguration(
                uri: "mongodb://127.0.0.1:1/msi", serverSelectionTimeoutMS: 300, connectTimeoutMS: 200, maxPoolSize: 2))
        let clock = ContinuousClock()
        let started = clock.now
        let error = await #expect(throws: MongoError.self) { try await pool.database().collection("x").findOne([:]) }
        #expect(error?.isUnavailable == true)
        #expect(clock.now - started < .seconds(5))
        #expect(pool.defaultDatabaseName == "msi")
        await pool.close()
        let closed = await #expect(throws: MongoError.self) { try await pool.ping() }
        #expect(closed?.code == .poolClosed)
    }

    @Test func anInvalidURIIsRefusedAtOnce() {
        let error = #expect(throws: MongoError.self) {
            try MongoClientPool(configuration: MongoConfiguration(uri: "http://nope"))
        }
        #expect(error?.code == .invalidURI)
    }

    @Test func manyConcurrentOperationsShareASmallPool() async throws {
        let pool = try MongoClientPool(configuration: MongoConfiguration(uri: try TestDatabase.uri(), maxPoolSize: 2))
        let shared = try TestDatabase.sharedPool().database(TestDatabase.name(for: #function))
        let database = pool.database(shared.name)
        do {
            let collection = database.collection("concurrent")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    group.addTask { try await collection.insertOne(["i": .int32(Int32(index))]) }
                }
                try await group.waitForAll()
            }
            #expect(try await collection.countDocuments() == 64)
            #expect(pool.usage.inUse == 0 && pool.usage.waiting == 0)
        }
        try await database.drop()
        await pool.close()
    }

    @Test func storedDatesDecimalsAndBinaryReadBackAsTheLegacyHubServedThem() async throws {
        try await TestDatabase.with { database in
            let collection = database.collection("legacy_json")
            let id = try #require(ObjectID(hex: "5a1b2c3d4e5f60718293a4b5"))
            _ = try await collection.insertOne([
                "_id": .objectID(id), "when": .datetime(1_503_910_800_000), "before": .datetime(-1),
                "price": .decimal128(try #require(BSONDecimal128("1.10"))), "big": .int64(9_007_199_254_740_993),
                "ratio": 1.0, "blob": .binary(BSONBinary(data: Array("hello".utf8))),
            ])
            let stored = try #require(try await collection.findOne(["_id": .objectID(id)]))
            #expect(
                LegacyJSONWriter().string(stored) == #"{"_id":"5a1b2c3d4e5f60718293a4b5","#
                    + #""when":"2017-08-28T09:00:00.000Z","before":"1969-12-31T23:59:59.999Z","#
                    + #""price":{"$numberDecimal":"1.10"},"big":"9007199254740993","ratio":1,"blob":"aGVsbG8="}"#)
        }
    }
}

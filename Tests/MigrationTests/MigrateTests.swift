import DAO
import Foundation
@testable import Migration
import Mongo
import MongoTestSupport
import Testing

/// `migrate`: from a legacy database (seeded with the fixture as the legacy hub left it) into another.
@Suite struct MigrateTests {
    /// Runs `body` with a legacy database holding the fixture and an empty target.
    private func withLegacyAndTarget(
        _ test: String = #function,
        _ body: (MongoDatabase, MongoDatabase) async throws -> Void
    ) async throws {
        try await TestDatabase.with("legacy\(test)") { legacy in
            try await legacy.collection("icube").insertMany(try LegacyFixtures.legacyChannels())
            try await legacy.collection("message").insertMany(try LegacyFixtures.legacyMessages())
            try await TestDatabase.with("target\(test)") { target in
                try await DatabaseIndexes.ensure(in: target)
                try await body(legacy, target)
            }
        }
    }

    @Test func migrateCopiesTheLegacyDatabaseNormalisedAndLeavesTheSourceAlone() async throws {
        try await withLegacyAndTarget { legacy, target in
            let before = try await snapshot(legacy)
            let report = try await Migrator(target: target, options: .quiet()).migrate(from: legacy)
            #expect(report.completed)
            #expect(report.counts("icube") == CollectionCounts(read: 4, inserted: 4))
            #expect(report.counts("message") == CollectionCounts(read: 302, inserted: 300, conflicts: 2))
            try Expect.expectedRuleCounts(report)
            #expect(report.verification?.passed == true)
            Expect.sameDocuments(try await target.collection("icube").find(), try LegacyFixtures.expectedChannels())
            Expect.sameDocuments(try await target.collection("message").find(), try LegacyFixtures.expectedMessages())
            #expect(try await snapshot(legacy) == before)
            #expect(try await legacy.collectionNames().sorted() == ["icube", "message"])
        }
    }

    @Test func smallBatchesPageThroughObjectIDAndStringIDsAndASecondRunChangesNothing() async throws {
        try await withLegacyAndTarget { legacy, target in
            let first = try await Migrator(target: target, options: .quiet(batchSize: 7)).migrate(from: legacy)
            #expect(first.counts("message") == CollectionCounts(read: 302, inserted: 300, conflicts: 2))
            let stored = try await snapshot(target)
            let second = try await Migrator(target: target, options: .quiet(batchSize: 7)).migrate(from: legacy)
            #expect(second.counts("message") == CollectionCounts(read: 302, unchanged: 300, conflicts: 2))
            #expect(second.counts("icube") == CollectionCounts(read: 4, unchanged: 4))
            #expect(try await snapshot(target) == stored)
        }
    }

    @Test func interruptedMigrationFinishesOnTheNextRun() async throws {
        try await withLegacyAndTarget { legacy, target in
            let first = try await Migrator(target: target, options: .quiet(batchSize: 40, maxBatches: 4))
                .migrate(from: legacy)
            #expect(!first.completed)
            let second = try await Migrator(target: target, options: .quiet(batchSize: 40)).migrate(from: legacy)
            #expect(second.completed)
            #expect(second.resumedInterruptedRun)
            #expect(second.verification?.passed == true)
            Expect.sameDocuments(try await target.collection("message").find(), try LegacyFixtures.expectedMessages())
        }
    }

    @Test func dryRunMigrationWritesNothing() async throws {
        try await TestDatabase.with { legacy in
            try await legacy.collection("icube").insertMany(try LegacyFixtures.legacyChannels())
            try await legacy.collection("message").insertMany(try LegacyFixtures.legacyMessages())
            try await TestDatabase.with("dryTarget") { target in
                let report = try await Migrator(target: target, options: .quiet(dryRun: true)).migrate(from: legacy)
                #expect(report.counts("message") == CollectionCounts(read: 302, inserted: 300, conflicts: 2))
                try Expect.expectedRuleCounts(report)
                #expect(try await target.collectionNames().isEmpty)
            }
        }
    }

    @Test func theSameDatabaseIsRefused() async throws {
        try await TestDatabase.with { database in
            await #expect(throws: MigrationError.self) {
                try await Migrator(target: database, options: .quiet()).migrate(from: database)
            }
        }
        #expect(
            DatabaseAddress(uri: "mongodb://localhost/msi").isSameDatabase(
                as: DatabaseAddress(uri: "mongodb://user:secret@127.0.0.1:27017/msi?appName=x")))
        #expect(
            !DatabaseAddress(uri: "mongodb://localhost/legacy").isSameDatabase(
                as: DatabaseAddress(uri: "mongodb://localhost/msi")))
        #expect(
            DatabaseAddress(uri: "mongodb://user:secret@db.example:27018/hub?tls=true").redacted
                == "mongodb://db.example:27018/hub")
    }

    private func snapshot(_ database: MongoDatabase) async throws -> [BSONDocument] {
        try await database.collection("icube").find([:], options: FindOptions(sort: ["_id": 1]))
            + database.collection("message").find([:], options: FindOptions(sort: ["_id": 1]))
    }
}

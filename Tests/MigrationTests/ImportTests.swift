import DAO
import Foundation
@testable import Migration
import Mongo
import MongoTestSupport
import Testing

/// `import` of the legacy fixture into a test database.
@Suite struct ImportTests {
    private func importFixture(
        into database: MongoDatabase, _ options: MigrationOptions = .quiet(),
        icube: URL? = LegacyFixtures.icubeLines,
        messages: URL? = LegacyFixtures.messageLines
    ) async throws -> MigrationReport {
        try await Migrator(target: database, options: options).importFiles(icube: icube, messages: messages)
    }

    @Test func importWritesTheExpectedDocumentsCountsAndConflicts() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let report = try await importFixture(into: database)
            #expect(report.completed)
            #expect(report.counts("icube") == CollectionCounts(read: 4, inserted: 4))
            #expect(report.counts("message") == CollectionCounts(read: 302, inserted: 300, conflicts: 2))
            try Expect.expectedRuleCounts(report)
            #expect(report.conflicts.map(\.reason) == [.duplicateID, .duplicateKey])
            #expect(report.verification?.passed == true)
            #expect(report.verification?.matching == 4)
            Expect.sameDocuments(try await database.collection("icube").find(), try LegacyFixtures.expectedChannels())
            Expect.sameDocuments(
                try await database.collection("message").find(),
                try LegacyFixtures.expectedMessages())
            let runs = try await database.collection("migrations").find()
            #expect(runs.count == 1)
            #expect(runs.first?["state"] == "completed")
            #expect(runs.first?[path: "report.collections.message.inserted"]?.int64Value == 300)
        }
    }

    @Test func importedMessagesAreNeverClaimedByTheRelay() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            _ = try await importFixture(into: database)
            let claimed = try await OutboxDAO(database: database).claim(
                owner: "test", now: .max / 2, leaseMS: 1000, limit: 1000)
            #expect(claimed == nil)
            #expect(try await database.collection("message").countDocuments(["relay.state": "imported"]) == 300)
        }
    }

    @Test func dryRunWritesNothingAndReportsTheSameCounts() async throws {
        try await TestDatabase.with { database in
            let report = try await importFixture(into: database, .quiet(dryRun: true))
            #expect(report.dryRun)
            #expect(report.completed)
            #expect(report.counts("icube").inserted == 4)
            #expect(report.counts("message") == CollectionCounts(read: 302, inserted: 300, conflicts: 2))
            try Expect.expectedRuleCounts(report)
            #expect(report.verification?.passed == true)
            #expect(try await database.collectionNames().isEmpty)
        }
    }

    @Test func secondRunChangesNothing() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            _ = try await importFixture(into: database)
            let before = try await snapshot(database)
            let report = try await importFixture(into: database, .quiet(batchSize: 64))
            #expect(report.completed)
            #expect(report.counts("icube") == CollectionCounts(read: 4, unchanged: 4))
            #expect(report.counts("message") == CollectionCounts(read: 302, unchanged: 300, conflicts: 2))
            #expect(report.verification?.passed == true)
            #expect(try await snapshot(database) == before)
        }
    }

    @Test func interruptedRunFinishesOnTheNext() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let first = try await importFixture(into: database, .quiet(batchSize: 50, maxBatches: 3))
            #expect(!first.completed)
            #expect(first.verification == nil)
            #expect(first.counts("message").read == 100)
            #expect(try await database.collection("message").countDocuments() < 300)
            let second = try await importFixture(into: database, .quiet(batchSize: 50))
            #expect(second.completed)
            #expect(second.resumedInterruptedRun)
            #expect(second.counts("message").inserted + second.counts("message").unchanged == 300)
            #expect(second.counts("message").unchanged >= 99)
            #expect(second.verification?.passed == true)
            Expect.sameDocuments(
                try await database.collection("message").find(),
                try LegacyFixtures.expectedMessages())
            let states = try await database.collection("migrations").find(
                [:],
                options: FindOptions(
                    sort: ["started_at": 1, "_id": 1])
            ).map { $0["state"]?.stringValue }
            #expect(states == ["interrupted", "completed"])
        }
    }

    @Test func cancelledRunIsFinishedByTheNext() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let task = Task { try await importFixture(into: database, .quiet(batchSize: 10)) }
            let messages = database.collection("message")
            while try await messages.countDocuments() == 0 { try await Task.sleep(for: .milliseconds(5)) }
            task.cancel()
            // Cancelled between batches (or inside one): it stops with CancellationError, or finished first.
            let first = try? await task.value
            #expect(first?.completed ?? true)
            let second = try await importFixture(into: database)
            #expect(second.completed)
            #expect(second.resumedInterruptedRun == (first == nil))
            #expect(try await messages.countDocuments() == 300)
            #expect(second.verification?.passed == true)
        }
    }

    @Test func arrayFilesInV2ExtendedJSONImportTheSameAsLegacyJSONLines() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let report = try await importFixture(
                into: database, icube: LegacyFixtures.icubeArray,
                messages: LegacyFixtures.messageArray)
            try Expect.expectedRuleCounts(report)
            #expect(report.verification?.passed == true)
            Expect.sameDocuments(try await database.collection("icube").find(), try LegacyFixtures.expectedChannels())
            Expect.sameDocuments(
                try await database.collection("message").find(),
                try LegacyFixtures.expectedMessages())
        }
    }

    @Test func eitherFileMayBeImportedAlone() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let cube = try await importFixture(into: database, messages: nil)
            #expect(cube.counts("icube").inserted == 4)
            #expect(cube.counts("message").read == 0)
            #expect(cube.verification?.passed == true)
            let messages = try await importFixture(into: database, icube: nil)
            #expect(messages.counts("message").inserted == 300)
            #expect(messages.verification == nil)
            // The cube imported before tells which topics are unknown.
            #expect(
                messages.rules.count(.messageTopicKeyUnknown)
                    == (try LegacyFixtures.expectedCount(
                        .messageTopicKeyUnknown)))
            await #expect(throws: MigrationError.self) {
                try await importFixture(into: database, icube: nil, messages: nil)
            }
        }
    }

    @Test func aTargetDocumentThatDiffersIsKeptAndReportedAsAConflict() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let channel = try #require(try LegacyFixtures.expectedChannels().first)
            var edited = channel
            edited["name"] = "Renamed in msi-hub"
            try await database.collection("icube").insertOne(edited)
            let report = try await importFixture(into: database, messages: nil)
            #expect(report.counts("icube") == CollectionCounts(read: 4, inserted: 3, conflicts: 1))
            #expect(report.conflicts.first?.reason == .targetDiffers)
            #expect(report.verification?.passed == false)
            #expect(report.verification?.mismatches.first?.contains("name") == true)
            #expect(!report.succeeded)
            let stored = try await database.collection("icube").findOne(["_id": channel["_id"] ?? .null])
            #expect(stored?["name"] == "Renamed in msi-hub")
        }
    }

    @Test func aMsiKeyTheTargetAlreadyUsesIsAConflictAndTheRestOfTheBatchIsWritten() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let taken = try #require(try LegacyFixtures.expectedMessages().last)
            // A message msi-hub sent itself, under another _id, that happens to hold the same msi_key.
            let own = taken.prepending("_id", .objectID(ObjectID())).prepending("title", "msi-hub's own")
            try await database.collection("message").insertOne(own)
            let report = try await importFixture(into: database, icube: nil)
            #expect(report.counts("message") == CollectionCounts(read: 302, inserted: 299, conflicts: 3))
            #expect(
                report.conflicts.contains(
                    MigrationConflict(
                        collection: "message", id: (taken["_id"] ?? .null).legacyJSON, reason: .duplicateKey)))
            #expect(try await database.collection("message").countDocuments() == 300)
        }
    }

    @Test func progressLinesCarryCountsAndRate() async throws {
        try await TestDatabase.with { database in
            let lines = LineCollector()
            let options = MigrationOptions(
                dryRun: true, batchSize: 100, progress: .lines, progressInterval: .zero,
                progressOutput: { lines.append($0) })
            _ = try await Migrator(target: database, options: options)
                .importFiles(icube: LegacyFixtures.icubeLines, messages: LegacyFixtures.messageLines)
            let output = lines.text
            #expect(output.contains("icube: 4 documents"))
            #expect(output.contains("message: 302 documents 100%"))
            #expect(output.contains("/s"))
        }
    }

    @Test func reportTextNamesEveryRuleAndTheDocumentHasEveryKey() async throws {
        try await TestDatabase.with { database in
            let report = try await importFixture(into: database, .quiet(dryRun: true))
            for rule in NormalisationRule.allCases {
                #expect(report.text.contains("\(rule.key): \(report.rules.count(rule))"))
                let stored = report.document["rules"]?.documentValue?[rule.key]?.int64Value
                #expect(stored == Int64(report.rules.count(rule)))
            }
            #expect(report.text.contains("Conflicts: 2"))
            #expect(report.document["conflict_count"]?.int64Value == 2)
        }
    }

    /// Every document of the target's two collections, in `_id` order.
    private func snapshot(_ database: MongoDatabase) async throws -> [BSONDocument] {
        try await database.collection("icube").find([:], options: FindOptions(sort: ["_id": 1]))
            + database.collection("message").find([:], options: FindOptions(sort: ["_id": 1]))
    }
}

/// Collects progress output from the migrator's task.
final class LineCollector: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var parts: [String] = []

    func append(_ text: String) { lock.withLock { parts.append(text) } }
    var text: String { lock.withLock { parts.joined() } }
}

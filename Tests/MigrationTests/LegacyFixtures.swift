import Foundation
@testable import Migration
import Mongo
import MongoTestSupport
import Testing

/// The legacy export under `fixtures/legacy/` (written by its `generate.py --fixtures`) and what it
/// should become.
enum LegacyFixtures {
    static let directory = Fixtures.directory.appendingPathComponent("legacy")

    /// JSON lines in legacy Extended JSON, as `mongoexport` 3.x writes.
    static let icubeLines = directory.appendingPathComponent("icube.jsonl")
    static let messageLines = directory.appendingPathComponent("message.jsonl")
    /// A JSON array (`--jsonArray`) in v2 Extended JSON: relaxed for the cube, canonical for messages.
    static let icubeArray = directory.appendingPathComponent("icube.array.json")
    static let messageArray = directory.appendingPathComponent("message.array.json")

    /// Every document of an export file.
    static func documents(_ url: URL) throws -> [BSONDocument] {
        var reader = try ExportFileReader(url: url)
        defer { reader.close() }
        var documents: [BSONDocument] = []
        while true {
            let batch: [BSONDocument] = try reader.next(100)
            if batch.isEmpty { return documents }
            documents += batch
        }
    }

    static func legacyChannels() throws -> [BSONDocument] { try documents(icubeLines) }
    static func legacyMessages() throws -> [BSONDocument] { try documents(messageLines) }
    static func expectedChannels() throws -> [BSONDocument] {
        try documents(directory.appendingPathComponent("expected/icube.json"))
    }
    static func expectedMessages() throws -> [BSONDocument] {
        try documents(directory.appendingPathComponent("expected/message.jsonl"))
    }

    /// The report the Python statement of the rules expects.
    static func expectedReport() throws -> BSONDocument {
        let text = try String(contentsOf: directory.appendingPathComponent("expected/report.json"), encoding: .utf8)
        return try BSONDocument(extendedJSON: text)
    }

    /// The expected count of `rule`.
    static func expectedCount(_ rule: NormalisationRule) throws -> Int {
        // The rule keys hold dots, so no dotted path: the rules document, then the key.
        Int(try expectedReport()["rules"]?.documentValue?[rule.key]?.int64Value ?? -1)
    }
}

/// Assertions shared by the suites.
enum Expect {
    /// `actual` holds the same documents as `expected` (by `_id`), each with the same content.
    static func sameDocuments(
        _ actual: [BSONDocument], _ expected: [BSONDocument],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.count == expected.count, sourceLocation: sourceLocation)
        let byID = Dictionary(actual.map { (DocumentKey($0["_id"] ?? .null), $0) }, uniquingKeysWith: { a, _ in a })
        for document in expected {
            let found = byID[DocumentKey(document["_id"] ?? .null)]
            #expect(
                found.map { DocumentContent.same($0, document) } == true,
                "\(document["_id"]?.legacyJSON ?? "?"): \(found?.description ?? "missing") != \(document)",
                sourceLocation: sourceLocation)
        }
    }

    /// The report's rule counts are those the Python statement of the rules expects.
    static func expectedRuleCounts(
        _ report: MigrationReport, collections: Set<String> = ["icube", "message"],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for rule in NormalisationRule.allCases where collections.contains(rule.collection) {
            #expect(
                report.rules.count(rule) == (try LegacyFixtures.expectedCount(rule)), "\(rule.key)",
                sourceLocation: sourceLocation)
        }
    }
}

extension MigrationOptions {
    /// Options for tests: no progress on the test's output.
    static func quiet(dryRun: Bool = false, batchSize: Int = 500, maxBatches: Int? = nil) -> MigrationOptions {
        MigrationOptions(dryRun: dryRun, batchSize: batchSize, maxBatches: maxBatches, progress: .none)
    }
}

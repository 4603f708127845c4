import Foundation
@testable import Migration
import Mongo
import Testing

/// Reading mongoexport files: JSON lines or an array, legacy or v2 Extended JSON, pretty or not.
@Suite struct ExportFileReaderTests {
    @Test func linesInLegacyFormAndArrayInV2FormHoldTheSameDocuments() throws {
        #expect(
            try LegacyFixtures.documents(LegacyFixtures.icubeLines)
                == LegacyFixtures.documents(LegacyFixtures.icubeArray))
        #expect(
            try LegacyFixtures.documents(LegacyFixtures.messageLines)
                == LegacyFixtures.documents(LegacyFixtures.messageArray))
        #expect(try LegacyFixtures.documents(LegacyFixtures.messageLines).count == 302)
    }

    @Test func legacyAndV2ExtendedJSONReadAsTheSameTypes() throws {
        let id = #""_id":{"$oid":"5a0b1c2d3e4f5a6b7c8d9e01"}"#
        let file = try temporaryFile(
            [
                #"{\#(id),"t":{"$numberLong":"1510651260123"},"d":{"$date":"2017-11-14T09:21:00.123Z"}}"#,
                #"{\#(id),"t":{"$numberLong":"1510651260123"},"d":{"$date":{"$numberLong":"1510651260123"}}}"#,
                #"{\#(id),"t":1510651260123,"d":{"$date":1510651260123}}"#,
            ].joined(separator: "\n"))
        let documents = try LegacyFixtures.documents(file)
        #expect(documents.count == 3)
        for document in documents {
            #expect(document["t"] == .int64(1_510_651_260_123))
            #expect(document["d"] == .datetime(1_510_651_260_123))
            #expect(document["_id"]?.objectIDValue?.hex == "5a0b1c2d3e4f5a6b7c8d9e01")
        }
    }

    @Test func prettyArraysWithBracesInStringsAreSplitIntoDocuments() throws {
        let file = try temporaryFile(
            """
            \u{FEFF}[
              {
                "_id": 1,
                "text": "a } and a { and a \\" quote",
                "nested": {"a": [1, {"b": 2}]}
              },
              {"_id": 2}
            ]
            """)
        let documents = try LegacyFixtures.documents(file)
        #expect(documents.map { $0["_id"] } == [.int32(1), .int32(2)])
        #expect(documents.first?["text"] == "a } and a { and a \" quote")
    }

    @Test func anEmptyFileHoldsNoDocuments() throws {
        #expect(try LegacyFixtures.documents(try temporaryFile("")).isEmpty)
        #expect(try LegacyFixtures.documents(try temporaryFile("[]\n")).isEmpty)
    }

    @Test(arguments: ["{\"_id\": 1}\nnot json\n", "{\"_id\": 1}\n{\"_id\": {\"$oid\": \"xyz\"}}\n", "{\"_id\": 1"])
    func malformedInputIsAnInvalidDocumentNamingTheLine(text: String) throws {
        let file = try temporaryFile(text)
        let error = try #require(throws: MigrationError.self) { try LegacyFixtures.documents(file) }
        #expect(error.code == .invalidDocument)
        #expect(error.message.contains("line"))
    }

    @Test func aMissingFileIsUnreadable() throws {
        let error = try #require(throws: MigrationError.self) {
            try ExportFileReader(url: URL(fileURLWithPath: "/nonexistent/icube.json"))
        }
        #expect(error.code == .unreadableFile)
    }

    private func temporaryFile(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }
}

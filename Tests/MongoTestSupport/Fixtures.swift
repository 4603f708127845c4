import Foundation
import Mongo

/// Data files under `fixtures/` at the top of the repository, read through our own BSON layer.
public enum Fixtures {
    /// The repository's `fixtures/` folder.
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fixtures")

    /// The document an Extended JSON fixture holds.
    public static func document(_ name: String) throws -> BSONDocument {
        let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        return try BSONDocument(extendedJSON: text)
    }

    /// The legacy hub's channel: ObjectIds, nested areas and subjects, and fields msi-hub does not know.
    public static func legacyChannel() throws -> BSONDocument { try document("legacy-channel.json") }

    /// Ids of the legacy channel fixture.
    public enum Legacy {
        public static let channelID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e01")!
        public static let libraryID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e02")!
        public static let hoursID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e03")!
        public static let booksID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e04")!
        public static let sportsID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e05")!
        public static let fixturesID = ObjectID(hex: "5a0b1c2d3e4f5a6b7c8d9e06")!
        public static let hoursTopic = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03"
    }
}

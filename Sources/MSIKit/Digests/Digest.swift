import Foundation
internal import GRDB

/// A person's daily digest as the hub pushes it (`audience` "digest" in the data): one notification for the
/// messages of the subjects and groups the person holds for a digest, with the list. The messages themselves come by
/// catch-up as usual; the digest is kept (the last one) for the app to show.
public struct Digest: Sendable, Hashable, Codable {
    /// One message the digest names.
    public struct Item: Sendable, Hashable, Codable {
        public var msiKey: String
        public var title: String
        /// The subject's or group's name.
        public var from: String
        /// When the hub accepted the message (Unix ms).
        public var timestamp: Int64

        enum CodingKeys: String, CodingKey {
            case msiKey = "msi_key", title, from, timestamp
        }
    }

    /// The digest's own id (24 hex digits).
    public var id: String
    /// "5 new: Library 3, Chess club 2".
    public var summary: String
    /// Every message it holds (exact, even when `items` lists fewer).
    public var count: Int
    /// The messages listed, oldest first (as many as fitted the push).
    public var items: [Item]
    /// When the hub sent it (Unix ms).
    public var timestamp: Int64

    /// Reads a digest's push data; nil for any other payload.
    public init?(payload data: [String: String]) {
        guard data["audience"] == "digest", let id = data["msi_key"], let count = data["count"].flatMap({ Int($0) })
        else { return nil }
        self.id = id
        self.summary = data["title"] ?? ""
        self.count = count
        self.items = (try? JSONDecoder().decode([Item].self, from: Data((data["items"] ?? "[]").utf8))) ?? []
        self.timestamp = data["timestamp"].flatMap { Int64($0) } ?? 0
    }
}

/// The last digest the device received, in `msikit_digest` (one row).
struct DigestStore: Sendable {
    let database: LocalDatabase

    /// Keeps `digest` as the last one unless a newer one is kept already; whether it was new.
    func keep(_ digest: Digest) async throws(MSIKitError) -> Bool {
        let json = String(decoding: (try? JSONEncoder().encode(digest)) ?? Data("{}".utf8), as: UTF8.self)
        return try await database.write { db in
            let newest = try Int64.fetchOne(db, sql: "SELECT timestamp FROM msikit_digest WHERE slot = 0")
            if let newest, newest >= digest.timestamp { return false }
            try db.execute(
                sql: "INSERT OR REPLACE INTO msikit_digest (slot, timestamp, json) VALUES (0, ?, ?)",
                arguments: [digest.timestamp, json])
            return true
        }
    }

    /// The last digest received; nil before the first.
    func last() async throws(MSIKitError) -> Digest? {
        let json = try await database.read { db in
            try String.fetchOne(db, sql: "SELECT json FROM msikit_digest WHERE slot = 0")
        }
        return json.flatMap { try? JSONDecoder().decode(Digest.self, from: Data($0.utf8)) }
    }
}

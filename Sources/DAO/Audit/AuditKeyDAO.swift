import HubTime
import Mongo

/// `audit_keys`: one key per person, user and device the audit log names, under the subject's pseudonym
/// (`{_id: pseudonym, kind, key: 32 bytes, created_at}`). An entry seals the subject's clear id with it; deleting the
/// key (an erasure) leaves every entry and the chain as they were and the id unreadable in them.
public struct AuditKeyDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// How many pseudonyms one read or insert names.
    static let chunk = 1_000

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.auditKeys)
        self.now = now
    }

    /// The stored keys of `pseudonyms`, by pseudonym (those without one are missing: never made, or erased).
    /// - Throws: `DAOError`.
    public func keys(_ pseudonyms: [String]) async throws -> [String: [UInt8]] {
        var keys: [String: [UInt8]] = [:]
        for start in stride(from: 0, to: pseudonyms.count, by: Self.chunk) {
            let ids = pseudonyms[start..<min(start + Self.chunk, pseudonyms.count)].map(BSONValue.string)
            let documents = try await mapErrors {
                try await collection.find(["_id": ["$in": .array(ids)]], options: FindOptions(projection: ["key": 1]))
            }
            for document in documents {
                if let id = document["_id"]?.stringValue, case .binary(let key)? = document["key"] {
                    keys[id] = key.data
                }
            }
        }
        return keys
    }

    /// The keys of `subjects` (pseudonym and kind), made from `fresh` for those without one: one read, and one
    /// unordered insert for the new ones (a key another replica stored first wins and is read back).
    /// - Throws: `DAOError`.
    public func keys(
        for subjects: [(pseudonym: String, kind: String)], fresh: () -> [UInt8]
    ) async throws -> [String: [UInt8]] {
        var keys = try await self.keys(subjects.map(\.pseudonym))
        var seen = Set(keys.keys)
        let missing = subjects.filter { seen.insert($0.pseudonym).inserted }
        guard !missing.isEmpty else { return keys }
        let made = missing.map { (pseudonym: $0.pseudonym, kind: $0.kind, key: fresh()) }
        var refused = Set<Int>()
        for start in stride(from: 0, to: made.count, by: Self.chunk) {
            let part = made[start..<min(start + Self.chunk, made.count)]
            let documents: [BSONDocument] = part.map {
                [
                    "_id": .string($0.pseudonym), "kind": .string($0.kind),
                    "key": .binary(BSONBinary(subtype: 0, data: $0.key)), "created_at": .datetime(now()),
                ]
            }
            let duplicates = try await mapErrors { try await collection.insertManyIgnoringDuplicates(documents) }
            refused.formUnion(duplicates.map { $0 + start })
        }
        for (index, subject) in made.enumerated() where !refused.contains(index) {
            keys[subject.pseudonym] = subject.key
        }
        let lost = refused.map { made[$0].pseudonym }
        if !lost.isEmpty { keys.merge(try await self.keys(lost)) { _, stored in stored } }
        return keys
    }

    /// Deletes the keys of `pseudonyms`; answers how many there were.
    /// - Throws: `DAOError`.
    public func delete(_ pseudonyms: [String]) async throws -> Int64 {
        var deleted: Int64 = 0
        for start in stride(from: 0, to: pseudonyms.count, by: Self.chunk) {
            let ids = pseudonyms[start..<min(start + Self.chunk, pseudonyms.count)].map(BSONValue.string)
            deleted += try await mapErrors { try await collection.deleteMany(["_id": ["$in": .array(ids)]]) }
        }
        return deleted
    }
}

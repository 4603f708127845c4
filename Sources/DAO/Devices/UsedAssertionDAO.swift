import HubTime
import Mongo

/// The person assertions that have bound a device, in `used_assertions`, each remembered until it expires (removed at
/// `expire_at`, `ExpiringCollection`), so that every replica refuses one presented again: the document's `_id` is the
/// assertion's replay key (a hash of its `jti`, or of its signed part), never the assertion.
public struct UsedAssertionDAO: Sendable {
    let collection: MongoCollection

    /// Expiry: a document goes once its `expire_at` (a date) has passed (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(
        CollectionName.usedAssertions, field: "expire_at", retiredTTLIndex: "expire_at")
    static let indexes = [expiry.index]

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.usedAssertions)
    }

    /// Records that the assertion of `key` was used, until `expiresAt` (Unix ms): true the first time, false when it
    /// was recorded already (a replay). One insert, the unique `_id` deciding between concurrent uses: never a
    /// findAndModify, which SecantusDB answers by reading the whole collection.
    /// - Throws: `DAOError`.
    public func record(_ key: String, until expiresAt: Int64) async throws -> Bool {
        do {
            _ = try await mapErrors {
                try await collection.insertOne(["_id": .string(key), "expire_at": .datetime(expiresAt)])
            }
            return true
        } catch let error as DAOError where error.code == .duplicate {
            return false
        }
    }
}

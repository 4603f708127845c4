import Foundation
import HubTime
import Mongo

/// The retention limits' deletes (`RETENTION_*_DAYS`), a bounded batch at a time on an index, never one delete of
/// millions: every record named by a message's `_id` (deliveries and held-back sends "<message hex>/...", receipts and
/// acknowledgements likewise) is as old as its message, whose ObjectId begins with its creation second, so "older
/// than the cutoff" is a range of `_id`.
public struct RetentionDAO: Sendable {
    let database: MongoDatabase

    /// What a retention limit applies to.
    public enum Kind: String, Sendable, CaseIterable {
        /// `deliveries` and `quiet_deferrals` (`RETENTION_DELIVERIES_DAYS`).
        case deliveries
        /// `receipts` and `person_acknowledgements` (`RETENTION_RECEIPTS_DAYS`).
        case receipts
        /// Staff messages in `message` (`RETENTION_MESSAGES_DAYS`).
        case messages
        /// Room posts in `message` (`RETENTION_ROOM_POSTS_DAYS`).
        case roomPosts = "room_posts"
    }

    public init(database: MongoDatabase) {
        self.database = database
    }

    /// Deletes up to `limit` records of `kind` from before `cutoff` (Unix ms) in each of its collections; answers how
    /// many it deleted (fewer than `limit` in every collection: nothing older is left).
    /// - Throws: `DAOError`.
    public func purgeBatch(_ kind: Kind, before cutoff: Int64, limit: Int) async throws -> (deleted: Int64, more: Bool)
    {
        let seconds = UInt32(clamping: max(cutoff, 0) / 1000)
        let prefix = String(format: "%08x", seconds)
        let oldest = ObjectID(hex: prefix + "0000000000000000")!
        let selections: [(String, BSONDocument)]
        switch kind {
        case .deliveries:
            selections = [CollectionName.deliveries, CollectionName.quietDeferrals].map {
                ($0, ["_id": ["$lt": .string(prefix)]])
            }
        case .receipts:
            selections = [CollectionName.receipts, CollectionName.personAcknowledgements].map {
                ($0, ["_id": ["$lt": .string(prefix)]])
            }
        case .messages, .roomPosts:
            // Only what the relay is done with: a message scheduled long ago for later, or still retried, stays.
            let settled: BSONValue = .array(
                [RelayStatus.sent, .failed, .expired, .imported, .rejected, .withdrawn].map { .string($0.rawValue) })
            selections = [
                (
                    CollectionName.message,
                    [
                        "_id": ["$lt": .objectID(oldest)], "sender.person": ["$exists": .bool(kind == .roomPosts)],
                        "relay.state": ["$in": settled],
                    ]
                )
            ]
        }
        var deleted: Int64 = 0
        var more = false
        for (name, selection) in selections {
            let collection = database.collection(name)
            let ids = try await mapErrors {
                try await collection.find(
                    selection, options: FindOptions(projection: ["_id": 1], sort: ["_id": 1], limit: Int64(limit)))
            }.compactMap { $0["_id"] }
            guard !ids.isEmpty else { continue }
            deleted += try await mapErrors { try await collection.deleteMany(["_id": ["$in": .array(ids)]]) }
            if ids.count == limit { more = true }
        }
        return (deleted, more)
    }
}

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

    /// Deletes up to `limit` records of `kind` from before `cutoff` (Unix ms) in each of its collections, after `after`
    /// (the `_id` the last batch ended at, per collection); answers how many it deleted and where each collection's
    /// batch ended (nil: nothing older is left there). A record of a message sent after the cutoff (one scheduled
    /// long ahead) is older than its message's sending, and stays; so does a held-back send still waiting, and a
    /// message the relay is not done with or a banner still shown.
    /// - Throws: `DAOError`.
    public func purgeBatch(
        _ kind: Kind, before cutoff: Int64, now: Int64, after: [String: BSONValue] = [:], limit: Int
    ) async throws -> (deleted: Int64, next: [String: BSONValue]) {
        let oldest = ObjectID(firstOfSecond: UInt32(clamping: max(cutoff, 0) / 1000))
        // A delivery's or receipt's `_id` begins with its message's hex id: those of messages made before the cutoff.
        let prefix = String(oldest.hex.prefix(8))
        let selections: [(String, BSONDocument)]
        switch kind {
        case .deliveries:
            selections = [
                (CollectionName.deliveries, ["_id": ["$lt": .string(prefix)]]),
                (CollectionName.quietDeferrals, ["_id": ["$lt": .string(prefix)], "state": ["$ne": "pending"]]),
            ]
        case .receipts:
            selections = [CollectionName.receipts, CollectionName.personAcknowledgements].map {
                ($0, ["_id": ["$lt": .string(prefix)]])
            }
        case .messages, .roomPosts:
            // Only what the relay is done with (`direct`: sent by the process that stored it), sent before the cutoff,
            // and no banner still shown.
            let settled: BSONValue = .array(
                [RelayStatus.direct, .sent, .failed, .expired, .imported, .rejected, .withdrawn].map {
                    .string($0.rawValue)
                })
            selections = [
                (
                    CollectionName.message,
                    [
                        "_id": ["$lt": .objectID(oldest)], "sender.person": ["$exists": .bool(kind == .roomPosts)],
                        "relay.state": ["$in": settled], "relay.send_at": ["$not": ["$gt": .int64(cutoff)]],
                        "relay.expires_at": ["$not": ["$gt": .int64(now)]],
                    ]
                )
            ]
        }
        var deleted: Int64 = 0
        var next: [String: BSONValue] = [:]
        for (name, selection) in selections {
            let collection = database.collection(name)
            var filter = selection
            if let start = after[name] { filter = ["$and": [.document(selection), ["_id": ["$gt": start]]]] }
            let ids = try await mapErrors {
                try await collection.find(
                    filter, options: FindOptions(projection: ["_id": 1], sort: ["_id": 1], limit: Int64(limit)))
            }.compactMap { $0["_id"] }
            guard let last = ids.last else { continue }
            if ids.count == limit { next[name] = last }
            let doomed = kind == .messages || kind == .roomPosts ? ids : try await sentBefore(cutoff, ids)
            guard !doomed.isEmpty else { continue }
            deleted += try await mapErrors { try await collection.deleteMany(["_id": ["$in": .array(doomed)]]) }
        }
        return (deleted, next)
    }

    /// The records among `ids` ("<message hex>/...") whose message was sent before `cutoff`, or is gone.
    private func sentBefore(_ cutoff: Int64, _ ids: [BSONValue]) async throws -> [BSONValue] {
        let messageOf: (BSONValue) -> ObjectID? = { id in
            id.stringValue.flatMap { $0.split(separator: "/").first }.flatMap { ObjectID(hex: $0) }
        }
        let messages = Set(ids.compactMap(messageOf))
        let late = try await mapErrors {
            try await database.collection(CollectionName.message).find(
                [
                    "_id": ["$in": .array(messages.map(BSONValue.objectID))],
                    "relay.send_at": ["$gt": .int64(cutoff)],
                ],
                options: FindOptions(projection: ["_id": 1]))
        }
        let kept = Set(late.compactMap { $0["_id"]?.objectIDValue })
        return ids.filter { messageOf($0).map { !kept.contains($0) } ?? true }
    }
}

import Mongo

/// Pauses of the relay to one FCM project, shared by every replica: a small document per project in
/// `relay_pause` (`_id`: the project, `until`: Unix ms), moved only later (`$max`) so that replicas that
/// hear FCM's 503 or 429 together keep the longest wait any of them was told.
public struct RelayPauseDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.relayPause)
    }

    /// Pauses the relay of `project` until `until` (Unix ms) unless it is paused longer already; `reason` and
    /// `by` (the worker) are for the operator. One upsert.
    /// - Throws: `DAOError`.
    public func pause(project: String, until: Int64, reason: String, by owner: String, now: Int64) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(project)],
                [
                    "$max": ["until": .int64(until)],
                    "$set": ["reason": .string(reason), "by": .string(owner), "updated_at": .int64(now)],
                ], options: UpdateOptions(upsert: true))
        }
    }

    /// When the pause of `project` ends (Unix ms; in the past when it is over), or nil when it was never paused.
    /// - Throws: `DAOError`.
    public func until(project: String) async throws -> Int64? {
        try await mapErrors {
            try await collection.findOne(["_id": .string(project)], projection: ["until": 1])?["until"]?.int64Value
        }
    }
}

import HubTime
import Mongo

/// A rate shared by every replica: a counter per key and window in `rate_windows`, taken from with one atomic
/// upsert (`$inc`), so N replicas together never exceed the limit. Old windows are removed once expired (`ExpiringCollection`).
///
/// A take the window has room for is one command: an upsert by `_id` that raises the counter only while it leaves room
/// for every unit asked (granted whole, nothing read back). Otherwise (the window nearly spent, or two first takers
/// at once) the counter is raised by an `updateOne` on `_id` and then read by `_id`, never by a `findAndModify`, which
/// the embedded database answers by reading the whole collection (a window per person posting in a room, per address
/// logging in, per second of sends: the collection grows with the school). The count read back may hold other takers'
/// units added in between: the grant is then smaller than it could have been, never larger, so the limit holds.
public struct RateWindowDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// A window goes once its `expire_at` has passed (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(CollectionName.rateWindows, field: "expire_at", retiredTTLIndex: "expire_at")
    static let indexes = [expiry.index]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.rateWindows)
        self.now = now
    }

    /// Takes up to `count` units of `key`'s window of `windowMS` holding `time` (nil: now), which allows `limit` in
    /// all; returns how many were granted (0 when the window is spent) and when the window after it starts (Unix ms).
    /// - Throws: `DAOError`.
    public func take(_ count: Int, of key: String, limit: Int, windowMS: Int64, at time: Int64? = nil) async throws
        -> (granted: Int, nextWindowAt: Int64)
    {
        let window = (time ?? now()) / windowMS
        let nextWindowAt = (window + 1) * windowMS
        let id: BSONValue = .string("\(key):\(window)")
        let raise: BSONDocument = ["$inc": ["used": .int64(Int64(count))]]
        var upsert = raise
        upsert["$setOnInsert"] = ["expire_at": .datetime(nextWindowAt + 60_000)]
        if count <= limit {
            // Raised only while the window has room for all of it: granted whole.
            let roomy: BSONDocument = ["_id": id, "used": ["$lte": .int64(Int64(limit - count))]]
            do {
                // The window's first take inserts it.
                _ = try await mapErrors {
                    try await collection.updateOne(roomy, upsert, options: UpdateOptions(upsert: true))
                }
                return (count, nextWindowAt)
            } catch let error as DAOError where error.code == .duplicate {
                // The window exists without that room, or another first taker inserted it meanwhile: asked again
                // without the insert.
                let raised = try await mapErrors { try await collection.updateOne(roomy, raise) }
                if raised.matchedCount > 0 { return (count, nextWindowAt) }
                if count == 1 { return (0, nextWindowAt) }  // not even one left
            }
        }
        do {
            _ = try await mapErrors {
                try await collection.updateOne(["_id": id], upsert, options: UpdateOptions(upsert: true))
            }
        } catch let error as DAOError where error.code == .duplicate {
            // Two first takers of the window at once: the other one inserted it; raise it as it stands.
            _ = try await mapErrors { try await collection.updateOne(["_id": id], raise) }
        }
        let document = try await mapErrors {
            try await collection.findOne(["_id": id], projection: ["used": 1])
        }
        let used = Int(document?["used"]?.int64Value ?? Int64(count))
        let before = used - count
        return (max(0, min(count, limit - before)), nextWindowAt)
    }
}

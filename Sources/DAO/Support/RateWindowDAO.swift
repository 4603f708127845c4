import HubTime
import Mongo

/// A rate shared by every replica: a counter per key and window in `rate_windows`, taken from with one atomic
/// upsert (`$inc`), so N replicas together never exceed the limit. Old windows expire through a TTL index.
public struct RateWindowDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    static let indexes = [IndexModel(keys: ["expire_at": 1], name: "expire_at", expireAfterSeconds: 0)]

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
        let document = try await mapErrors {
            try await collection.findOneAndUpdate(
                ["_id": .string("\(key):\(window)")],
                [
                    "$inc": ["used": .int64(Int64(count))],
                    "$setOnInsert": ["expire_at": .datetime(nextWindowAt + 60_000)],
                ],
                options: FindOneAndUpdateOptions(returnNew: true, upsert: true))
        }
        let used = Int(document?["used"]?.int64Value ?? Int64(count))
        let before = used - count
        return (max(0, min(count, limit - before)), nextWindowAt)
    }
}

import HubTime
import Mongo

/// Every collection whose documents expire (`ExpiringCollection`): what the sweep goes through, and whose TTL indexes
/// the start drops.
public enum ExpiringCollections {
    public static let all: [ExpiringCollection] = [
        FenceDAO.expiry, RateWindowDAO.expiry, UsedAssertionDAO.expiry, IdempotencyKeyDAO.expiry,
        MessageQueueDAO.expiry, WebhookDeliveryDAO.expiry, PersonDataDAO.blockExpiry, SessionDAO.expiry,
        LoginFailureDAO.expiry, SignInAttemptDAO.expiry,
    ]
}

/// Removes what has expired in every `ExpiringCollection`: one range delete a collection, on its plain index. Every
/// replica runs it (`ExpirySweeper`): a second sweep finds nothing, so they need no lease between them.
public struct ExpirySweepDAO: Sendable {
    let database: MongoDatabase
    let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.database = database
        self.now = now
    }

    /// Deletes every expired document of `collections` (by default every one that expires); returns how many went.
    /// - Throws: `DAOError`.
    @discardableResult
    public func sweep(_ collections: [ExpiringCollection] = ExpiringCollections.all) async throws -> Int {
        let time = now()
        var removed: Int64 = 0
        for expiring in collections {
            removed += try await mapErrors {
                try await database.collection(expiring.collection).deleteMany(expiring.expired(at: time))
            }
        }
        return Int(removed)
    }

    /// Drops the TTL indexes the expiring collections had (a start before the plain index of the same field is made).
    static func retireTTLIndexes(in database: MongoDatabase) async throws {
        for expiring in ExpiringCollections.all {
            try await database.collection(expiring.collection).dropIndex(named: expiring.retiredTTLIndex)
        }
    }
}

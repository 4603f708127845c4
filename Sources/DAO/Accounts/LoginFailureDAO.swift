import Mongo

/// Failed portal logins, one document each in `login_failures`, kept in the database so that every replica
/// throttles the same user; a TTL index deletes them once they no longer count.
public struct LoginFailureDAO: Sendable {
    let collection: MongoCollection
    let now: @Sendable () -> Int64

    /// The indexes `DatabaseIndexes.ensure` creates: the count's query, and expiry (well after any window used).
    static let indexes = [
        IndexModel(keys: ["username": 1, "at": -1], name: "username.at"),
        IndexModel(keys: ["at": 1], name: "at", expireAfterSeconds: 3600),
    ]

    public init(database: MongoDatabase, now: @escaping @Sendable () -> Int64 = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.loginFailures)
        self.now = now
    }

    /// How many failed logins `username` had in the last `windowMS`.
    /// - Throws: `DAOError`.
    public func count(username: String, windowMS: Int64) async throws -> Int {
        let since = now() - windowMS
        return Int(try await mapErrors {
            try await collection.countDocuments(["username": .string(username), "at": ["$gt": .datetime(since)]])
        })
    }

    /// Records a failed login of `username` now.
    /// - Throws: `DAOError`.
    public func record(username: String) async throws {
        let document: BSONDocument = [
            "_id": .objectID(ObjectID()), "username": .string(username), "at": .datetime(now()),
        ]
        _ = try await mapErrors { try await collection.insertOne(document) }
    }

    /// Forgets the failures of `username` (after a successful login).
    /// - Throws: `DAOError`.
    public func clear(username: String) async throws {
        _ = try await mapErrors { try await collection.deleteMany(["username": .string(username)]) }
    }
}

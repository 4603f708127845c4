import HubTime
import Mongo

/// Failed logins (portal form, HTTP Basic), one document each in `login_failures` with the username, the
/// client's address key and, for IPv6, its /48's key (`site`), kept in the database so that every replica counts the same failures; a TTL index
/// deletes them once they no longer count.
public struct LoginFailureDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// A failure goes an hour after it (`ExpirySweepDAO`), well after any window the counts read.
    static let expiry = ExpiringCollection(
        CollectionName.loginFailures, field: "at", afterSeconds: 3_600, retiredTTLIndex: "at")

    /// The indexes `DatabaseIndexes.ensure` creates: the two counts' queries, and expiry.
    static let indexes = [
        IndexModel(keys: ["username": 1, "at": -1], name: "username.at"),
        IndexModel(keys: ["address": 1, "at": -1], name: "address.at"),
        IndexModel(keys: ["site": 1, "at": -1], name: "site.at"),
        expiry.index,
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.loginFailures)
        self.now = now
    }

    /// How many failed logins `username` had, how many came from `address` and how many from `site` (any
    /// username; 0 without a site), in the last `windowMS`; the counts run at once.
    /// - Throws: `DAOError`.
    public func counts(
        username: String, address: String, site: String? = nil,
        windowMS: Int64
    ) async throws -> (username: Int, address: Int, site: Int) {
        let since = BSONValue.datetime(now() - windowMS)
        async let bySite = count(site: site, since: since)
        async let byUsername = mapErrors {
            try await collection.countDocuments(["username": .string(username), "at": ["$gt": since]])
        }
        async let byAddress = mapErrors {
            try await collection.countDocuments(["address": .string(address), "at": ["$gt": since]])
        }
        return (Int(try await byUsername), Int(try await byAddress), Int(try await bySite))
    }

    /// How many failures came from `site` since `since`; 0 without a site (IPv4), with no query.
    private func count(site: String?, since: BSONValue) async throws -> Int64 {
        guard let site else { return 0 }
        return try await mapErrors {
            try await collection.countDocuments(["site": .string(site), "at": ["$gt": since]])
        }
    }

    /// Records a failed login of `username` from `address` (in `site`, when given) now.
    /// - Throws: `DAOError`.
    public func record(username: String, address: String, site: String? = nil) async throws {
        var document: BSONDocument = [
            "_id": .objectID(ObjectID()), "username": .string(username), "address": .string(address),
            "at": .datetime(now()),
        ]
        if let site { document["site"] = .string(site) }
        _ = try await mapErrors { try await collection.insertOne(document) }
    }

    /// Forgets the failures of `username` from `address` (after a successful login from there); those from other
    /// addresses still count against it there.
    /// - Throws: `DAOError`.
    public func clear(username: String, address: String) async throws {
        _ = try await mapErrors {
            try await collection.deleteMany(["username": .string(username), "address": .string(address)])
        }
    }

    /// Forgets every failure of `username`, from anywhere (`msi-hub user unlock`).
    /// - Throws: `DAOError`.
    public func clear(username: String) async throws {
        _ = try await mapErrors { try await collection.deleteMany(["username": .string(username)]) }
    }
}

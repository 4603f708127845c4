import HubTime
import Mongo

/// A portal session: who is logged in, and the token their forms must carry.
public struct PortalSession: Sendable {
    /// The stored key: a hash of the cookie's secret, never the secret itself.
    public var key: String
    public var username: String
    /// The CSRF token every form of this session carries.
    public var csrfToken: String
    /// When it was created and when it expires, in Unix milliseconds.
    public var createdAt: Int64
    public var expiresAt: Int64
    /// When the session ends however active, in Unix ms, when sooner than the portal's maximum: a sign-in through
    /// the OpenID provider ends when its id_token expires (`ends_at`).
    public var endsAt: Int64?
    /// The id_token of a sign-in through the OpenID provider, sent back as the provider's end-session hint on
    /// sign-out (never logged).
    public var idToken: String?

    /// Reads a stored session; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let key = document["_id"]?.stringValue, case .datetime(let expiresAt)? = document["expires_at"] else {
            return nil
        }
        self.key = key
        self.username = document.string("username")
        self.csrfToken = document.string("csrf")
        self.createdAt = document["created_at"]?.int64Value ?? 0
        self.expiresAt = expiresAt
        self.endsAt = document["ends_at"]?.int64Value
        self.idToken = document["id_token"]?.stringValue
    }
}

/// Portal sessions, in msi-hub's own `sessions` collection: expired ones are removed (`ExpiringCollection`), so any
/// replica serves any session and sessions survive a restart.
public struct SessionDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// A session goes at its `expires_at` (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(CollectionName.sessions, field: "expires_at", retiredTTLIndex: "expires_at")

    /// The indexes `DatabaseIndexes.ensure` creates: expiry at `expires_at`, and a user's sessions.
    static let indexes = [
        expiry.index,
        IndexModel(keys: ["username": 1], name: "username"),
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.sessions)
        self.now = now
    }

    /// Stores a new session under `key` that expires `lifetimeMS` from now, or `maxLifetimeMS` when that is sooner.
    /// - Throws: `DAOError` (`.duplicate` if the key exists, which 256 random bits make impossible in practice).
    /// - Parameters:
    ///   - endsAt: when the session ends at the latest (Unix ms), when that is sooner than `maxLifetimeMS` after now.
    ///   - idToken: the OpenID provider's id_token of the sign-in, kept for sign-out.
    public func create(
        key: String, username: String, csrfToken: String, lifetimeMS: Int64,
        maxLifetimeMS: Int64, endsAt: Int64? = nil, idToken: String? = nil
    ) async throws -> PortalSession {
        let time = now()
        var document: BSONDocument = [
            "_id": .string(key), "username": .string(username), "csrf": .string(csrfToken),
            "created_at": .int64(time),
            "expires_at": .datetime(min(time + min(lifetimeMS, maxLifetimeMS), endsAt ?? .max)),
        ]
        if let endsAt { document["ends_at"] = .int64(endsAt) }
        if let idToken { document["id_token"] = .string(idToken) }
        try await mapErrors { _ = try await collection.insertOne(document) }
        guard let session = PortalSession(document: document) else {
            preconditionFailure("a session made here reads back")
        }
        return session
    }

    /// The live session stored under `key` created less than `maxLifetimeMS` ago, or nil (the expiry sweep runs
    /// only once a minute, so expiry is checked here too).
    /// - Throws: `DAOError`.
    public func find(key: String, maxLifetimeMS: Int64) async throws -> PortalSession? {
        let time = now()
        let document = try await mapErrors {
            try await collection.findOne([
                "_id": .string(key), "expires_at": ["$gt": .datetime(time)],
                "created_at": ["$gt": .int64(time - maxLifetimeMS)],
            ])
        }
        guard let session = document.flatMap(PortalSession.init(document:)), (session.endsAt ?? .max) > time else {
            return nil
        }
        return session
    }

    /// Moves `session`'s expiry to `lifetimeMS` from now, never past `maxLifetimeMS` after it was created, once
    /// that moves it by more than `slackMS` (so an active user does not cause a write per page); returns the
    /// expiry the session has now.
    /// - Throws: `DAOError`.
    @discardableResult
    public func extend(
        _ session: PortalSession, lifetimeMS: Int64, maxLifetimeMS: Int64,
        slackMS: Int64
    ) async throws -> Int64 {
        let expiresAt = min(now() + lifetimeMS, session.createdAt + maxLifetimeMS, session.endsAt ?? .max)
        guard expiresAt - session.expiresAt > slackMS else { return session.expiresAt }
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(session.key), "expires_at": ["$lt": .datetime(expiresAt - slackMS)]],
                ["$set": ["expires_at": .datetime(expiresAt)]])
        }
        return expiresAt
    }

    /// Ends the session stored under `key`; ending one that does not exist is not an error.
    /// - Throws: `DAOError`.
    public func delete(key: String) async throws {
        _ = try await mapErrors { try await collection.deleteOne(["_id": .string(key)]) }
    }

    /// Ends every session of `username` (when the user is disabled, their password reset or role changed).
    /// - Throws: `DAOError`.
    public func deleteAll(username: String) async throws {
        _ = try await mapErrors { try await collection.deleteMany(["username": .string(username)]) }
    }
}

import HubTime
import Mongo

/// A portal sign-in through the OpenID provider, begun and not finished: what its callback needs again.
public struct SignInAttempt: Sendable, Equatable {
    /// The `state` sent to the provider.
    public var state: String
    /// The `nonce` the id_token must carry.
    public var nonce: String
    /// The PKCE verifier of the code.
    public var codeVerifier: String
    /// The portal page to go to once signed in.
    public var next: String?

    public init(state: String, nonce: String, codeVerifier: String, next: String?) {
        self.state = state
        self.nonce = nonce
        self.codeVerifier = codeVerifier
        self.next = next
    }
}

/// Sign-ins begun, in `sign_in_attempts`, under the hash of the browser's pre-login cookie: any replica finishes
/// one another began, each is taken once (the callback deletes it, so a replayed callback finds nothing), and a TTL
/// index removes those never finished.
public struct SignInAttemptDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The indexes `DatabaseIndexes.ensure` creates: expiry at `expires_at`.
    static let expiry = ExpiringCollection(
        CollectionName.signInAttempts, field: "expires_at", retiredTTLIndex: "expires_at")
    static let indexes = [expiry.index]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.signInAttempts)
        self.now = now
    }

    /// Stores `attempt` under `key` for `lifetimeMS`.
    /// - Throws: `DAOError`.
    public func create(key: String, _ attempt: SignInAttempt, lifetimeMS: Int64) async throws {
        var document: BSONDocument = [
            "_id": .string(key), "state": .string(attempt.state), "nonce": .string(attempt.nonce),
            "verifier": .string(attempt.codeVerifier), "expires_at": .datetime(now() + lifetimeMS),
        ]
        if let next = attempt.next { document["next"] = .string(next) }
        try await mapErrors { _ = try await collection.insertOne(document) }
    }

    /// The live attempt stored under `key`, removed as it is read; nil when there is none, it expired, or another
    /// request took it first (a find by `_id`, then a delete by `_id` that only one caller wins).
    /// - Throws: `DAOError`.
    public func take(key: String) async throws -> SignInAttempt? {
        let found = try await mapErrors {
            try await collection.findOne(["_id": .string(key), "expires_at": ["$gt": .datetime(now())]])
        }
        guard let found else { return nil }
        let deleted = try await mapErrors { try await collection.deleteOne(["_id": .string(key)]) }
        guard deleted == 1 else { return nil }
        return SignInAttempt(
            state: found.string("state"), nonce: found.string("nonce"), codeVerifier: found.string("verifier"),
            next: found["next"]?.stringValue)
    }
}

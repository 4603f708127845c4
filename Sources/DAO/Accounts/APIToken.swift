import HubTime
import Mongo

/// An API token for scripts: its secret is shown once at creation and stored only as a hash.
public struct APIToken: Sendable {
    public var id: ObjectID
    /// The name messages sent with the token carry as their `sender`.
    public var name: String
    public var role: Role
    /// Whether the token may send to persons directly (the right `direct`, stored as `direct: true`).
    public var direct: Bool
    /// The user the token acts for (who created it in the portal, or `--owner`); nil: a token of its own. The
    /// approval rule takes a message sent with it as its owner's.
    public var owner: String?
    /// When it was created, in Unix milliseconds.
    public var createdAt: Int64
    /// When it was last used, in Unix milliseconds (updated at most once a minute).
    public var lastUsedAt: Int64?
    /// When it was revoked, if it was.
    public var revokedAt: Int64?
    /// The hash of its secret, under which it is found.
    public var secretHash: String

    /// Reads a stored token; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id"), let role = Role(rawValue: document.string("role")) else { return nil }
        self.id = id
        self.name = document.string("name")
        self.role = role
        self.direct = document["direct"]?.boolValue ?? false
        self.owner = document["owner"]?.stringValue
        self.createdAt = document["created_at"]?.int64Value ?? 0
        self.lastUsedAt = document["last_used_at"]?.int64Value
        self.revokedAt = document["revoked_at"]?.int64Value
        self.secretHash = document.string("hash")
    }
}

/// API tokens, in msi-hub's own `tokens` collection, found by the hash of their secret.
public struct TokenDAO: Sendable {
    let collection: MongoCollection
    /// The clock (Unix ms) that dates creations, uses and revocations.
    public let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.tokens)
        self.now = now
    }

    /// Stores a new token under the hash of its secret. The database refuses a second live token of one
    /// name (a unique index over `live_name`, which only live tokens carry), so concurrent creates cannot both win.
    /// With `direct` it carries the right `direct` (`direct: true`); with an `owner`, the user it acts for.
    /// - Throws: `DAOError` `.duplicate` when a live token has the name already.
    public func add(
        name: String, role: Role, secretHash: String, direct: Bool = false,
        owner: String? = nil
    ) async throws -> APIToken {
        var document: BSONDocument = [
            "_id": .objectID(ObjectID()), "name": .string(name), "live_name": .string(name),
            "role": .string(role.rawValue),
            "hash": .string(secretHash), "created_at": .int64(now()),
        ]
        if direct { document["direct"] = true }
        if let owner { document["owner"] = .string(owner) }
        do {
            try await mapErrors { _ = try await collection.insertOne(document) }
        } catch let error as DAOError where error.code == .duplicate {
            throw DAOError(.duplicate, "a token called \(name) exists already")
        }
        guard let token = APIToken(document: document) else { preconditionFailure("a token made here reads back") }
        return token
    }

    /// The index that keeps live token names unique: only live tokens carry `live_name`.
    static let liveNameIndex = IndexModel(
        keys: ["live_name": 1], name: "live_name", unique: true,
        partialFilter: ["live_name": ["$exists": true]])

    /// Gives live tokens stored before `live_name` existed their `live_name`, so the unique index covers them.
    static func backfillLiveNames(in database: MongoDatabase) async throws {
        let collection = database.collection(CollectionName.tokens)
        let filter: BSONDocument = ["revoked_at": ["$exists": false], "live_name": ["$exists": false]]
        for document in try await collection.find(filter) {
            guard let id = document.objectID("_id") else { continue }
            _ = try await collection.updateOne(
                ["_id": .objectID(id)], ["$set": ["live_name": .string(document.string("name"))]])
        }
    }

    /// The live (not revoked) token whose secret has this hash, or nil; notes when it was used.
    /// - Throws: `DAOError`.
    public func find(secretHash: String) async throws -> APIToken? {
        let document = try await mapErrors {
            try await collection.findOne(["hash": .string(secretHash), "revoked_at": ["$exists": false]])
        }
        guard let document, let token = APIToken(document: document) else { return nil }
        await noteUse(of: token)
        return token
    }

    /// The live (not revoked) token called `name`, or nil.
    /// - Throws: `DAOError`.
    public func live(named name: String) async throws -> APIToken? {
        let document = try await mapErrors { try await collection.findOne(["live_name": .string(name)]) }
        return document.flatMap(APIToken.init(document:))
    }

    /// Every live (not revoked) token.
    /// - Throws: `DAOError`.
    public func live() async throws -> [APIToken] {
        try await mapErrors {
            try await collection.find(["revoked_at": ["$exists": false]]).compactMap(APIToken.init(document:))
        }
    }

    /// Records that `token` was used now, when its last noted use is over a minute old: one write a
    /// minute at most per token, conditional so concurrent requests and replicas do not pile up.
    /// Best effort: a failure leaves the old time.
    public func noteUse(of token: APIToken) async {
        let time = now()
        guard (token.lastUsedAt ?? 0) < time - 60_000 else { return }
        _ = try? await collection.updateOne(
            [
                "_id": .objectID(token.id),
                "$or": [["last_used_at": ["$exists": false]], ["last_used_at": ["$lt": .int64(time - 60_000)]]],
            ],
            ["$set": ["last_used_at": .int64(time)]])
    }

    /// Every token, revoked ones included, by name.
    /// - Throws: `DAOError`.
    public func list() async throws -> [APIToken] {
        try await mapErrors {
            try await collection.find([:], options: FindOptions(sort: ["name": 1, "_id": 1])).compactMap(
                APIToken.init(document:))
        }
    }

    /// Revokes the live token called `name` (or with this id); it stops working at once.
    /// - Throws: `DAOError` `.tokenNotFound`.
    public func revoke(nameOrID: String) async throws {
        var filter: BSONDocument = ["name": .string(nameOrID)]
        if let id = ObjectID(hex: nameOrID) { filter = ["$or": [["name": .string(nameOrID)], ["_id": .objectID(id)]]] }
        filter["revoked_at"] = ["$exists": false]
        let result = try await mapErrors {
            try await collection.updateMany(
                filter, ["$set": ["revoked_at": .int64(now())], "$unset": ["live_name": ""]])
        }
        guard result.matchedCount > 0 else { throw DAOError(.tokenNotFound, "no live token is called \(nameOrID)") }
    }
}

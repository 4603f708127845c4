import HubTime
import Mongo

/// A person who logs in to the portal or calls the API with a password.
public struct User: Sendable {
    public var id: ObjectID
    public var username: String
    /// The bcrypt hash of the password; the password itself is never stored.
    public var passwordHash: String
    public var role: Role
    public var disabled: Bool
    /// Whether the user may send to persons directly (the right `direct`, stored as `direct: true`).
    public var direct: Bool
    /// When the user was created, in Unix milliseconds.
    public var createdAt: Int64
    /// Whether the OpenID provider's groups disabled the user (`disabled_by: "provider"`): their next sign-in in
    /// one of the groups enables them again, while a user an admin disabled stays disabled.
    public var disabledByProvider: Bool
    /// Whether the user has signed in through the OpenID provider at least once (`sign_in: "oidc"`).
    public var signsInWithProvider: Bool

    /// Reads a stored user; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id"), let role = Role(rawValue: document.string("role")) else { return nil }
        self.id = id
        self.username = document.string("username")
        self.passwordHash = document.string("password_hash")
        self.role = role
        self.disabled = document["disabled"]?.boolValue ?? false
        self.direct = document["direct"]?.boolValue ?? false
        self.createdAt = document["created_at"]?.int64Value ?? 0
        self.disabledByProvider = document.string("disabled_by") == "provider"
        self.signsInWithProvider = document.string("sign_in") == "oidc"
    }
}

/// Users, in msi-hub's own `users` collection.
public struct UserDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.users)
        self.now = now
    }

    /// Adds a user, with the right `direct` when `direct` is true.
    /// - Throws: `DAOError` `.duplicate` when the username is taken.
    public func add(username: String, passwordHash: String, role: Role, direct: Bool = false) async throws -> User {
        let document = newUser(username: username, passwordHash: passwordHash, role: role, direct: direct)
        try await mapErrors { _ = try await collection.insertOne(document) }
        guard let user = User(document: document) else { preconditionFailure("a user made here reads back") }
        return user
    }

    /// Adds a user who signs in through the OpenID provider: no password (password logins never match it).
    /// - Throws: `DAOError` `.duplicate` when the username is taken.
    public func addSignedIn(username: String, role: Role) async throws -> User {
        var document = newUser(username: username, passwordHash: "", role: role, direct: false)
        document["sign_in"] = "oidc"
        try await mapErrors { _ = try await collection.insertOne(document) }
        guard let user = User(document: document) else { preconditionFailure("a user made here reads back") }
        return user
    }

    /// Records that `username` signs in through the OpenID provider.
    /// - Throws: `DAOError` `.userNotFound`.
    public func markSignedIn(username: String) async throws {
        try await set(username: username, ["sign_in": "oidc"])
    }

    /// Disables a user who signs in through the provider for its groups (`disabled_by: "provider"`), or enables one
    /// the provider's groups had disabled; a user an admin disabled, or a local user who never signed in through the
    /// provider, is left as they are (the filter names only the provider's).
    /// - Returns: whether the user changed.
    /// - Throws: `DAOError`.
    @discardableResult
    public func setDisabledByProvider(username: String, _ disabled: Bool) async throws -> Bool {
        // Only a user who signs in through the provider: a local account of the same name is the admins' to disable.
        let filter: BSONDocument =
            disabled
            ? ["username": .string(username), "sign_in": "oidc", "disabled": ["$ne": true]]
            : ["username": .string(username), "disabled_by": "provider"]
        let update: BSONDocument =
            disabled
            ? ["$set": ["disabled": true, "disabled_by": "provider"]]
            : ["$set": ["disabled": false], "$unset": ["disabled_by": ""]]
        let result = try await mapErrors { try await collection.updateOne(filter, update) }
        return result.modifiedCount == 1
    }

    /// Adds the first user only when there is no user at all; returns nil when users exist.
    ///
    /// Replicas starting together race safely: the unique username index lets one of them win.
    /// - Throws: `DAOError`.
    public func addFirst(username: String, passwordHash: String, role: Role) async throws -> User? {
        let existing = try await mapErrors { try await collection.countDocuments() }
        guard existing == 0 else { return nil }
        do {
            return try await add(username: username, passwordHash: passwordHash, role: role)
        } catch let error as DAOError where error.code == .duplicate {
            return nil
        }
    }

    /// The user called `username`.
    /// - Throws: `DAOError` `.userNotFound`.
    public func get(username: String) async throws -> User {
        let document = try await mapErrors { try await collection.findOne(["username": .string(username)]) }
        guard let document, let user = User(document: document) else {
            throw DAOError(.userNotFound, "no user is called \(username)")
        }
        return user
    }

    /// Whether a user is called `username`.
    /// - Throws: `DAOError`.
    public func exists(username: String) async throws -> Bool {
        let document = try await mapErrors {
            try await collection.findOne(["username": .string(username)], projection: ["_id": 1])
        }
        return document != nil
    }

    /// Deletes the user with this id (an add undone); deleting one that does not exist is not an error.
    /// - Throws: `DAOError`.
    public func delete(id: ObjectID) async throws {
        _ = try await mapErrors { try await collection.deleteOne(["_id": .objectID(id)]) }
    }

    /// Every user, by name.
    /// - Throws: `DAOError`.
    public func list() async throws -> [User] {
        try await mapErrors {
            try await collection.find([:], options: FindOptions(sort: ["username": 1])).compactMap(User.init(document:))
        }
    }

    /// Disables or re-enables a user; a disabled user cannot log in or call the API.
    /// - Throws: `DAOError` `.userNotFound`.
    public func setDisabled(username: String, _ disabled: Bool) async throws {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["username": .string(username)], ["$set": ["disabled": .bool(disabled)], "$unset": ["disabled_by": ""]])
        }
        guard result.matchedCount == 1 else { throw DAOError(.userNotFound, "no user is called \(username)") }
    }

    /// Gives a user the right `direct` (`direct: true`) or takes it away (the field removed).
    /// - Throws: `DAOError` `.userNotFound`.
    public func setDirect(username: String, _ direct: Bool) async throws {
        let update: BSONDocument = direct ? ["$set": ["direct": true]] : ["$unset": ["direct": ""]]
        let result = try await mapErrors { try await collection.updateOne(["username": .string(username)], update) }
        guard result.matchedCount == 1 else { throw DAOError(.userNotFound, "no user is called \(username)") }
    }

    /// Replaces a user's password hash.
    /// - Throws: `DAOError` `.userNotFound`.
    public func setPasswordHash(username: String, _ passwordHash: String) async throws {
        try await set(username: username, ["password_hash": .string(passwordHash)])
    }

    /// Changes a user's role.
    /// - Throws: `DAOError` `.userNotFound`.
    public func setRole(username: String, _ role: Role) async throws {
        try await set(username: username, ["role": .string(role.rawValue)])
    }

    private func set(username: String, _ fields: BSONDocument) async throws {
        let result = try await mapErrors {
            try await collection.updateOne(["username": .string(username)], ["$set": .document(fields)])
        }
        guard result.matchedCount == 1 else { throw DAOError(.userNotFound, "no user is called \(username)") }
    }

    private func newUser(username: String, passwordHash: String, role: Role, direct: Bool) -> BSONDocument {
        var document: BSONDocument = [
            "_id": .objectID(ObjectID()), "username": .string(username), "password_hash": .string(passwordHash),
            "role": .string(role.rawValue), "disabled": false, "created_at": .int64(now()),
        ]
        if direct { document["direct"] = true }
        return document
    }
}

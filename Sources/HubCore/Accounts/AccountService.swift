import DAO
import Mongo

/// Users, API tokens and portal sessions: each change with its consequences in one place, which the portal
/// and the command line both call. A password reset, a role change or a disable ends the user's portal
/// sessions (but the session of an admin changing their own password); a revoked token stops working in this
/// process at once and everywhere within a second.
public struct AccountService: Sendable {
    /// Checks passwords and tokens; hashes new ones.
    public let credentials: Credentials
    /// The live API tokens in memory.
    public let tokenDirectory: TokenDirectory
    /// Portal sessions (the portal's middleware finds and extends them).
    public let sessions: SessionDAO
    /// Failed portal logins, for the throttle.
    public let loginFailures: LoginFailureDAO
    let users: UserDAO
    let tokens: TokenDAO

    init(database: MongoDatabase, bcryptCost: UInt8) {
        self.users = UserDAO(database: database)
        self.tokens = TokenDAO(database: database)
        self.sessions = SessionDAO(database: database)
        self.loginFailures = LoginFailureDAO(database: database)
        self.tokenDirectory = TokenDirectory(tokens: tokens)
        self.credentials = Credentials(users: users, tokens: tokens, bcryptCost: bcryptCost, directory: tokenDirectory)
    }

    /// The shortest password accepted.
    public static let minimumPasswordLength = 8

    /// Why `name` cannot be a username or token name, or nil when it can: what `access` lists and message
    /// senders hold, short and printable.
    public static func nameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || "._-@".contains($0) }) else {
            return "Use 1 to 64 letters, digits, “.”, “_”, “-” or “@”."
        }
        return nil
    }

    // MARK: Users

    /// Every user, by name.
    public func users() async throws -> [User] {
        try await users.list()
    }

    /// The user called `username`.
    /// - Throws: `AccountRefusal.userNotFound`; `DAOError` when the database fails.
    public func user(_ username: String) async throws -> User {
        do {
            return try await users.get(username: username)
        } catch let error as DAOError where error.code == .userNotFound {
            throw AccountRefusal(.userNotFound, "no user is called \(username)")
        }
    }

    /// Adds a user with `password`, or a generated one when nil; returns the password to show once.
    /// - Throws: `AccountRefusal` (`.invalidName`, `.nameTaken`, `.weakPassword`); `DAOError`.
    @discardableResult
    public func addUser(_ username: String, role: Role, password: String? = nil) async throws -> String {
        if let problem = Self.nameProblem(username) { throw AccountRefusal(.invalidName, problem) }
        let password = try Self.checked(password ?? PasswordGenerator.make())
        do {
            _ = try await users.add(username: username, passwordHash: try await credentials.hash(password: password), role: role)
        } catch let error as DAOError where error.code == .duplicate {
            throw AccountRefusal(.nameTaken, "a user called \(username) exists already")
        }
        return password
    }

    /// Creates `admin` with a generated password when no user exists; returns its password to print once.
    public func addFirstAdmin() async throws -> (username: String, password: String)? {
        guard try await users.list().isEmpty else { return nil }
        let password = PasswordGenerator.make()
        let hash = try await credentials.hash(password: password)
        guard try await users.addFirst(username: "admin", passwordHash: hash, role: .admin) != nil else { return nil }
        return ("admin", password)
    }

    /// Sets a user's password (a generated one when nil) and ends their portal sessions, unless `actor` is that
    /// user (an admin changing their own password stays logged in); returns the password to show once.
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.weakPassword`); `DAOError`.
    @discardableResult
    public func resetPassword(of username: String, to password: String? = nil, by actor: String? = nil) async throws -> String {
        let password = try Self.checked(password ?? PasswordGenerator.make())
        _ = try await user(username)
        try await users.setPasswordHash(username: username, try await credentials.hash(password: password))
        if username != actor { try await sessions.deleteAll(username: username) }
        return password
    }

    /// Changes a user's role and ends their portal sessions (their pages change).
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.selfLockout` when an admin demotes themself); `DAOError`.
    public func setRole(of username: String, to role: Role, by actor: String? = nil) async throws {
        _ = try await user(username)
        if username == actor, role != .admin {
            throw AccountRefusal(.selfLockout, "you cannot take away your own admin role")
        }
        try await users.setRole(username: username, role)
        if username != actor { try await sessions.deleteAll(username: username) }
    }

    /// Disables a user (they can no longer log in, their sessions end) or enables them again.
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.selfLockout` when an admin disables themself); `DAOError`.
    public func setDisabled(_ username: String, _ disabled: Bool, by actor: String? = nil) async throws {
        _ = try await user(username)
        if disabled, username == actor { throw AccountRefusal(.selfLockout, "you cannot disable yourself") }
        try await users.setDisabled(username: username, disabled)
        if disabled { try await sessions.deleteAll(username: username) }
    }

    // MARK: Tokens

    /// Every token, revoked ones included, by name (never their secrets).
    public func tokens() async throws -> [APIToken] {
        try await tokens.list()
    }

    /// Creates a token and returns its secret, shown only this once; it works at once in this process.
    /// - Throws: `AccountRefusal` (`.invalidName`, `.nameTaken`); `DAOError`.
    public func createToken(name: String, role: Role) async throws -> String {
        if let problem = Self.nameProblem(name) { throw AccountRefusal(.invalidName, problem) }
        let (secret, hash) = Credentials.newToken()
        do {
            _ = try await tokens.add(name: name, role: role, secretHash: hash)
        } catch let error as DAOError where error.code == .duplicate {
            throw AccountRefusal(.nameTaken, "a live token called \(name) exists already")
        }
        return secret
    }

    /// Revokes the live token with this name or id: it stops working at once in this process, and within a
    /// second in every other.
    /// - Throws: `AccountRefusal.tokenNotFound`; `DAOError`.
    public func revokeToken(_ nameOrID: String) async throws {
        do {
            try await tokens.revoke(nameOrID: nameOrID)
        } catch let error as DAOError where error.code == .tokenNotFound {
            throw AccountRefusal(.tokenNotFound, "no live token is called \(nameOrID)")
        }
        // The follower would catch up within a second; this process stops the token now.
        try? await tokenDirectory.refresh()
    }

    private static func checked(_ password: String) throws -> String {
        guard password.count >= minimumPasswordLength else {
            throw AccountRefusal(.weakPassword, "a password needs at least \(minimumPasswordLength) characters")
        }
        return password
    }
}

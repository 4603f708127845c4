import DAO
import HubTime
import Logging
import Mongo

/// Users, API tokens, logins and portal sessions: each change with its consequences in one place, which the portal,
/// the API and the command line all call. A password reset, a role change or a disable ends the user's portal
/// sessions (but the session of an admin changing their own password); a revoked token stops working in this
/// process at once and everywhere within a second; every password login goes through one policy (`logIn`).
public struct AccountService: Sendable {
    /// Checks tokens; hashes new passwords (password logins go through `logIn`).
    public let credentials: Credentials
    /// The live API tokens in memory.
    public let tokenDirectory: TokenDirectory
    let users: UserDAO
    let tokens: TokenDAO
    let sessions: SessionDAO
    let login: LoginPolicy
    /// Where changes to users and tokens, and logins refused past the throttle, are recorded.
    let audit: AuditLog
    /// Whether users may log in with a password (the portal's form, HTTP Basic): false when staff sign in only
    /// through the OpenID provider (`OIDC_ONLY=true`). API tokens work either way.
    public let passwordLogins: Bool

    init(
        database: MongoDatabase, audit: AuditLog, bcryptCost: UInt8, loginLimits: LoginLimits = LoginLimits(),
        passwordLogins: Bool = true, now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.passwordLogins = passwordLogins
        self.users = UserDAO(database: database, now: now)
        self.tokens = TokenDAO(database: database, now: now)
        self.sessions = SessionDAO(database: database, now: now)
        self.tokenDirectory = TokenDirectory(tokens: tokens)
        self.credentials = Credentials(
            users: users, tokens: tokens, bcryptCost: bcryptCost, directory: tokenDirectory,
            gate: BcryptGate(
                concurrency: loginLimits.concurrentChecks,
                queue: loginLimits.waitingChecks))
        self.login = LoginPolicy(
            failures: LoginFailureDAO(database: database, now: now), credentials: credentials,
            limits: loginLimits)
        self.audit = audit
    }

    /// The shortest password accepted, in characters.
    public static let minimumPasswordLength = 10
    /// The longest password accepted, in UTF-8 bytes: bcrypt ignores every byte past the 72nd.
    public static let maximumPasswordBytes = 72

    /// Why `password` cannot be a password, or nil when it can: 10 characters at least (with the login throttle,
    /// beyond guessing online), 72 bytes at most (what bcrypt reads; a longer one would be cut silently).
    public static func passwordProblem(_ password: String) -> String? {
        if password.count < minimumPasswordLength {
            return "A password needs at least \(minimumPasswordLength) characters."
        }
        if password.utf8.count > maximumPasswordBytes {
            return "A password may have at most \(maximumPasswordBytes) bytes (72 letters without accents, fewer with)."
        }
        return nil
    }

    /// Why `name` cannot be a username or token name, or nil when it can: what `access` lists and message
    /// senders hold, short and printable.
    public static func nameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || "._-@".contains($0) })
        else {
            return "Use 1 to 64 letters, digits, “.”, “_”, “-” or “@”."
        }
        return nil
    }

    // MARK: Logging in

    /// The enabled user `username` with `password`, logging in from `address` (nil: the command line), through
    /// the one login policy: failures counted per username and per address in the database and checked before
    /// bcrypt runs; the bcrypt work bounded.
    /// - Throws: `LoginRefusal` (`.invalidCredentials`, `.throttled` with when to retry, `.busy`); `DAOError`.
    public func logIn(
        username: String, password: String, from address: ClientAddress?,
        logger: Logger = Logger(label: "msi-hub")
    ) async throws -> Identity {
        guard passwordLogins else { throw LoginRefusal.passwordsOff }
        do {
            return try await login.logIn(username: username, password: password, from: address, logger: logger)
        } catch let refusal as LoginRefusal where refusal.code == .throttled {
            await audit.recordThrottledLogin(
                username: username, address: address?.throttleKey ?? LoginPolicy.localAddress)
            throw refusal
        }
    }

    /// Forgets the failed logins of `username` from every address, so the throttle lets them in at once.
    /// - Throws: `AccountRefusal.userNotFound`; `DAOError`.
    public func unlock(_ username: String) async throws {
        _ = try await user(username)
        try await login.unlock(username)
    }

    // MARK: Portal sessions

    /// Stores a new portal session of `username` under `key` (a hash of the cookie's secret).
    /// - Throws: `DAOError`.
    /// - Parameters:
    ///   - endsAt: when the session ends however active (Unix ms), when sooner than the lifetime's maximum: a
    ///     sign-in through the OpenID provider's id_token expiry.
    ///   - idToken: that sign-in's id_token, for the provider's sign-out.
    @discardableResult
    public func startSession(
        key: String, username: String, csrfToken: String,
        lifetime: SessionLifetime, endsAt: Int64? = nil, idToken: String? = nil
    ) async throws -> PortalSession {
        try await sessions.create(
            key: key, username: username, csrfToken: csrfToken,
            lifetimeMS: lifetime.idleMS, maxLifetimeMS: lifetime.maximumMS, endsAt: endsAt, idToken: idToken)
    }

    /// The session stored under `key` and its user, or nil when there is none: it expired (idle, or older than
    /// the maximum), or its user is gone or disabled. A found session's idle expiry moves forward, never past
    /// the maximum, at most one write every few minutes.
    /// - Throws: `DAOError`.
    public func session(key: String, lifetime: SessionLifetime) async throws -> (session: PortalSession, user: User)? {
        guard var session = try await sessions.find(key: key, maxLifetimeMS: lifetime.maximumMS) else { return nil }
        let user: User
        do {
            user = try await users.get(username: session.username)
        } catch let error as DAOError where error.code == .userNotFound {
            return nil
        }
        guard !user.disabled else { return nil }
        session.expiresAt = try await sessions.extend(
            session, lifetimeMS: lifetime.idleMS,
            maxLifetimeMS: lifetime.maximumMS,
            slackMS: min(lifetime.idleMS / 10, 300_000))
        return (session, user)
    }

    /// Ends the session stored under `key` (logging out, or a new login replacing it); ending one that does
    /// not exist is not an error.
    /// - Throws: `DAOError`.
    public func endSession(key: String) async throws {
        try await sessions.delete(key: key)
    }

    /// Ends every portal session of `username`.
    /// - Throws: `DAOError`.
    public func endSessions(of username: String) async throws {
        try await sessions.deleteAll(username: username)
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

    /// Adds a user with `password`, or a generated one when nil, with the right `direct` when `direct` is true;
    /// returns the password to show once.
    /// - Throws: `AccountRefusal` (`.invalidName`, `.nameTaken`, `.weakPassword`); `DAOError`.
    @discardableResult
    public func addUser(_ username: String, role: Role, password: String? = nil, direct: Bool = false) async throws
        -> String
    {
        if let problem = Self.nameProblem(username) { throw AccountRefusal(.invalidName, problem) }
        let password = try Self.checked(password ?? PasswordGenerator.make())
        // A token of the same name would pass every access list that names the user, and the other way round.
        guard try await tokens.live(named: username) == nil else { throw Self.tokenHasName(username) }
        let user: User
        do {
            let hash = try await credentials.hash(password: password)
            user = try await users.add(username: username, passwordHash: hash, role: role, direct: direct)
        } catch let error as DAOError where error.code == .duplicate {
            throw AccountRefusal(.nameTaken, "a user called \(username) exists already")
        }
        // A token created meanwhile under the name: one of the two gives way (both, if both look at once).
        if try await tokens.live(named: username) != nil {
            try await users.delete(id: user.id)
            throw Self.tokenHasName(username)
        }
        await audit.record(
            action: "user.create", target: AuditTarget(kind: "user", id: username),
            change: AuditChange.created(["role": .string(role.rawValue), "direct": .bool(direct)]))
        return password
    }

    /// Creates `admin` with a generated password when no user exists; returns its password to print once.
    public func addFirstAdmin() async throws -> (username: String, password: String)? {
        guard try await users.list().isEmpty else { return nil }
        let password = PasswordGenerator.make()
        let hash = try await credentials.hash(password: password)
        guard try await users.addFirst(username: "admin", passwordHash: hash, role: .admin) != nil else { return nil }
        await audit.record(
            action: "user.create", target: AuditTarget(kind: "user", id: "admin"),
            change: AuditChange.created(["role": .string(Role.admin.rawValue)]))
        return ("admin", password)
    }

    /// Sets a user's password (a generated one when nil) and ends their portal sessions, unless `actor` is that
    /// user (an admin changing their own password stays logged in); returns the password to show once.
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.weakPassword`); `DAOError`.
    @discardableResult
    public func resetPassword(of username: String, to password: String? = nil, by actor: String? = nil) async throws
        -> String
    {
        let password = try Self.checked(password ?? PasswordGenerator.make())
        _ = try await user(username)
        try await users.setPasswordHash(username: username, try await credentials.hash(password: password))
        await audit.record(action: "user.password", target: AuditTarget(kind: "user", id: username))
        if username != actor { try await endSessions(of: username) }
        return password
    }

    /// Changes a user's role and ends their portal sessions (their pages change).
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.selfLockout` when an admin demotes themself); `DAOError`.
    public func setRole(of username: String, to role: Role, by actor: String? = nil) async throws {
        let before = try await user(username)
        if username == actor, role != .admin {
            throw AccountRefusal(.selfLockout, "you cannot take away your own admin role")
        }
        try await users.setRole(username: username, role)
        await audit.record(
            action: "user.role", target: AuditTarget(kind: "user", id: username),
            change: AuditChange.edit(
                before: ["role": .string(before.role.rawValue)],
                after: ["role": .string(role.rawValue)]))
        if username != actor { try await endSessions(of: username) }
    }

    /// Gives a user the right `direct` (to send to persons directly) or takes it away. Sessions go on: the portal
    /// reads the user again on every page, so the change applies at once.
    /// - Throws: `AccountRefusal.userNotFound`; `DAOError`.
    public func setDirect(of username: String, to direct: Bool) async throws {
        do {
            try await users.setDirect(username: username, direct)
            await audit.record(
                action: "user.direct", target: AuditTarget(kind: "user", id: username),
                change: AuditChange.edit(before: ["direct": .bool(!direct)], after: ["direct": .bool(direct)]))
        } catch let error as DAOError where error.code == .userNotFound {
            throw AccountRefusal(.userNotFound, "no user is called \(username)")
        }
    }

    /// Disables a user (they can no longer log in, their sessions end) or enables them again.
    /// - Throws: `AccountRefusal` (`.userNotFound`, `.selfLockout` when an admin disables themself); `DAOError`.
    public func setDisabled(_ username: String, _ disabled: Bool, by actor: String? = nil) async throws {
        _ = try await user(username)
        if disabled, username == actor { throw AccountRefusal(.selfLockout, "you cannot disable yourself") }
        try await users.setDisabled(username: username, disabled)
        await audit.record(
            action: disabled ? "user.disable" : "user.enable", target: AuditTarget(kind: "user", id: username))
        if disabled { try await endSessions(of: username) }
    }

    // MARK: Tokens

    /// Every token, revoked ones included, by name (never their secrets).
    public func tokens() async throws -> [APIToken] {
        try await tokens.list()
    }

    /// Creates a token (with the right `direct` when `direct` is true) acting for `owner` (a user; nil: a token of
    /// its own) and returns its secret, shown only this once; it works at once in this process.
    /// - Throws: `AccountRefusal` (`.invalidName`, `.nameTaken`, `.userNotFound` for an owner who is no user);
    ///   `DAOError`.
    public func createToken(name: String, role: Role, direct: Bool = false, owner: String? = nil) async throws -> String
    {
        if let problem = Self.nameProblem(name) { throw AccountRefusal(.invalidName, problem) }
        // Messages sent with the token carry its name as sender, and access lists name users: a token named like
        // a user would send wherever that user may.
        guard try await !users.exists(username: name) else { throw Self.userHasName(name) }
        if let owner, try await !users.exists(username: owner) {
            throw AccountRefusal(.userNotFound, "no user is called \(owner): a token's owner is a user")
        }
        let (secret, hash) = Credentials.newToken()
        let token: APIToken
        do {
            token = try await tokens.add(name: name, role: role, secretHash: hash, direct: direct, owner: owner)
        } catch let error as DAOError where error.code == .duplicate {
            throw AccountRefusal(.nameTaken, "a live token called \(name) exists already")
        }
        // A user added meanwhile under the name: the token gives way.
        if try await users.exists(username: name) {
            try await tokens.revoke(nameOrID: token.id.hex)
            throw Self.userHasName(name)
        }
        await audit.record(
            action: "token.create", target: AuditTarget(kind: "token", id: name),
            change: AuditChange.created([
                "id": .string(token.id.hex), "role": .string(role.rawValue),
                "direct": .bool(direct), "owner": .string(owner ?? ""),
            ]))
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
        await audit.record(action: "token.revoke", target: AuditTarget(kind: "token", id: nameOrID))
        // The follower would catch up within a second; this process stops the token now.
        try? await tokenDirectory.refresh()
    }

    private static func checked(_ password: String) throws -> String {
        if let problem = passwordProblem(password) { throw AccountRefusal(.weakPassword, problem) }
        return password
    }

    private static func tokenHasName(_ name: String) -> AccountRefusal {
        AccountRefusal(.nameTaken, "a live API token is called \(name); a user cannot have a token's name")
    }

    private static func userHasName(_ name: String) -> AccountRefusal {
        AccountRefusal(.nameTaken, "a user is called \(name); a token cannot have a user's name")
    }
}

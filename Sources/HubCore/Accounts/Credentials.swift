import Mongo
import DAO
import HummingbirdBcrypt
import NIOPosix

/// Checks passwords and API tokens; the only place that knows how secrets are hashed.
public struct Credentials: Sendable {
    let users: UserDAO
    let tokens: TokenDAO
    /// bcrypt's work factor for new password hashes.
    let bcryptCost: UInt8
    /// Live tokens in memory, when the hub follows them; nil: every lookup asks the database.
    let directory: TokenDirectory?
    /// Bounds the password checks running and waiting at once.
    let gate: BcryptGate

    public init(users: UserDAO, tokens: TokenDAO, bcryptCost: UInt8 = 11, directory: TokenDirectory? = nil) {
        let limits = LoginLimits()
        self.init(
            users: users, tokens: tokens, bcryptCost: bcryptCost, directory: directory,
            gate: BcryptGate(concurrency: limits.concurrentChecks, queue: limits.waitingChecks))
    }

    init(users: UserDAO, tokens: TokenDAO, bcryptCost: UInt8, directory: TokenDirectory?, gate: BcryptGate) {
        self.users = users
        self.tokens = tokens
        self.bcryptCost = bcryptCost
        self.directory = directory
        self.gate = gate
    }

    /// The identity of a username and password, or nil when they do not match an enabled user. Only the login
    /// policy calls it (`AccountService.logIn`), which counts failures before a check runs.
    /// - Throws: `LoginRefusal.busy` when the gate is full; `DAOError` when the database fails.
    func identity(username: String, password: String) async throws -> Identity? {
        let user: User
        do {
            user = try await users.get(username: username)
        } catch let error as DAOError where error.code == .userNotFound {
            // Spend the same time as a real check, so timing does not tell which usernames exist.
            _ = try await verify(password, hash: Self.dummyHash)
            return nil
        }
        // A user who signs in only through the OpenID provider has no password: nothing matches it.
        guard !user.passwordHash.isEmpty else {
            _ = try await verify(password, hash: Self.dummyHash)
            return nil
        }
        guard try await verify(password, hash: user.passwordHash), !user.disabled else { return nil }
        return Identity(name: user.username, role: user.role, kind: .user, direct: user.direct)
    }

    /// The identity of an API token's secret, or nil when no live token has it.
    /// - Throws: `DAOError` when the database fails.
    public func identity(token secret: String) async throws -> Identity? {
        guard secret.hasPrefix(Self.tokenPrefix), secret.utf8.count < 200 else { return nil }
        let hash = Self.hash(token: secret)
        if let directory, let token = directory.token(secretHash: hash) {
            if directory.shouldNoteUse(of: token, now: tokens.now()) { await tokens.noteUse(of: token) }
            return Identity(name: token.name, role: token.role, kind: .token, direct: token.direct, owner: token.owner)
        }
        // Not in memory, or the memory is not confirmed current: the database decides.
        guard let token = try await tokens.find(secretHash: hash) else { return nil }
        return Identity(name: token.name, role: token.role, kind: .token, direct: token.direct, owner: token.owner)
    }

    /// A bcrypt hash of `password`, computed off the event loops.
    public func hash(password: String) async throws -> String {
        let cost = bcryptCost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// A new token secret (256 random bits) and the hash stored for it.
    public static func newToken() -> (secret: String, hash: String) {
        let secret = tokenPrefix + Secret.make()
        return (secret, hash(token: secret))
    }

    /// The stored form of a token (`Secret.hash`).
    public static func hash(token: String) -> String {
        Secret.hash(token)
    }

    /// Every token starts with this, so leaked ones are easy to recognise.
    static let tokenPrefix = "msi_"

    /// bcrypt is slow on purpose: it runs on NIO's blocking pool, never on an event loop, and through the gate.
    /// `hash` is an autoclosure so the dummy hash is first made inside `runIfActive` too.
    private func verify(_ password: String, hash: @escaping @Sendable @autoclosure () -> String) async throws -> Bool {
        try await gate.run {
            try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash()) }
        }
    }

    /// A hash no password matches, checked when the username is unknown. Made on first use, which is inside
    /// `runIfActive`: bcrypt never runs on a cooperative thread.
    private static let dummyHash = Bcrypt.hash("no user has this password", cost: 11)
}

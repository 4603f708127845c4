import DAO
import HubTime
import Logging
import Mongo
import OIDC
import SignedTokens

/// Staff signing in to the portal through the school's OpenID provider: the one home of what a sign-in means.
/// `begin` stores the attempt (state, nonce, PKCE verifier) under the browser's pre-login cookie and answers where
/// to send the browser; `finish` takes that attempt once, checks the callback's `state`, redeems the code, and
/// sets the user from the id_token's claims: created when new (no password), their role and access lists from
/// their groups (`StaffDirectoryRules`), disabled when in none of the groups and enabled again when back in one,
/// each change in the audit log; then a portal session that ends when the id_token does, at the latest.
///
/// The username claim is the identity: a local user of the same name is the same user (their password keeps
/// working unless `OIDC_ONLY`), so the approval rule's "another person" holds across both ways in.
public struct StaffSignIn: Sendable {
    /// The provider: its name, its documents, the code flow.
    public let provider: OIDCProvider
    /// Who may enter, with which role and access.
    public let rules: StaffDirectoryRules
    let attempts: SignInAttemptDAO
    /// Counts the sign-ins each address begins a minute, across replicas.
    let rates: RateWindowDAO
    let accounts: AccountService
    let cube: CubeService
    let logger: Logger
    let now: UnixClock

    /// How long a begun sign-in may take at the provider before its callback is refused.
    public static let attemptLifetime: Duration = .seconds(600)
    /// The most sign-ins one address (an IPv6 /64) may begin a minute: each stores an attempt for ten minutes, so a
    /// script hammering the button cannot fill the database (a school behind one address still has room).
    public static let beginsPerMinute = 60

    init(
        database: MongoDatabase, provider: OIDCProvider, rules: StaffDirectoryRules, accounts: AccountService,
        cube: CubeService, logger: Logger, now: @escaping UnixClock
    ) {
        self.provider = provider
        self.rules = rules
        self.attempts = SignInAttemptDAO(database: database, now: now)
        self.rates = RateWindowDAO(database: database, now: now)
        self.accounts = accounts
        self.cube = cube
        self.logger = logger
        self.now = now
    }

    /// The provider's name on the login page.
    public var displayName: String { provider.settings.displayName }

    /// Begins a sign-in for the browser at `address` whose pre-login cookie hashes to `attemptKey`; answers the
    /// provider's authorization URL.
    /// - Throws: `SignInRefusal.tooManyAttempts` past `beginsPerMinute` from the address; `SignInRefusal.provider`
    ///   when the provider's documents cannot be had; `DAOError`.
    public func begin(attemptKey: String, next: String?, redirectURI: String, from address: ClientAddress?) async throws
        -> String
    {
        let taken = try await rates.take(
            1, of: "oidc-begin:\(address?.throttleKey ?? LoginPolicy.localAddress)", limit: Self.beginsPerMinute,
            windowMS: 60_000)
        guard taken.granted > 0 else {
            throw SignInRefusal(
                .tooManyAttempts, "Too many sign-ins from your network this minute. Try again in a minute.",
                retryAfter: Int(max(1, (taken.nextWindowAt - now() + 999) / 1000)))
        }
        let begun: (pending: PendingSignIn, url: String)
        do {
            begun = try await provider.begin(redirectURI: redirectURI)
        } catch let error as OIDCError {
            throw Self.refusal(error, provider: displayName)
        }
        try await attempts.create(
            key: attemptKey,
            SignInAttempt(
                state: begun.pending.state, nonce: begun.pending.nonce, codeVerifier: begun.pending.codeVerifier,
                next: next),
            lifetimeMS: Self.attemptLifetime.milliseconds)
        return begun.url
    }

    /// What a finished sign-in gives the portal.
    public struct SignedIn: Sendable {
        public var username: String
        public var role: Role
        /// The page the user asked for before signing in.
        public var next: String?
        /// When the session ends at the latest (the id_token's `exp`), in Unix ms.
        public var endsAt: Int64
    }

    /// What the provider sent the browser back with.
    public struct Callback: Sendable {
        public var state: String?
        public var code: String?
        public var error: String?

        public init(state: String?, code: String?, error: String?) {
            self.state = state
            self.code = code
            self.error = error
        }
    }

    /// Finishes the sign-in of the browser whose pre-login cookie hashes to `attemptKey` and starts its portal
    /// session under `sessionKey`.
    /// - Throws: `SignInRefusal` (`.noAttempt`, `.stateMismatch`, `.provider`, `.invalidUsername`, `.notInGroups`,
    ///   `.disabled`); `DAOError`.
    public func finish(
        attemptKey: String?, callback: Callback, redirectURI: String, sessionKey: String, csrfToken: String,
        lifetime: SessionLifetime
    ) async throws -> SignedIn {
        guard let attemptKey, let attempt = try await attempts.take(key: attemptKey) else {
            throw SignInRefusal(.noAttempt, "This sign-in has expired or was already used. Sign in again.")
        }
        let pending = PendingSignIn(state: attempt.state, nonce: attempt.nonce, codeVerifier: attempt.codeVerifier)
        guard let state = callback.state, pending.matches(state: state) else {
            throw SignInRefusal(.stateMismatch, "This sign-in did not start in this browser. Sign in again.")
        }
        if let error = callback.error {
            throw SignInRefusal(
                .provider, "\(displayName) did not sign you in (\(OIDCProvider.printable(error))).",
                oidc: OIDCError(.providerError, "the provider answered \(OIDCProvider.printable(error))"))
        }
        guard let code = callback.code, (1...4096).contains(code.utf8.count) else {
            throw SignInRefusal(.provider, "\(displayName) sent no sign-in code. Sign in again.")
        }
        let token: IDToken
        do {
            token = try await provider.finish(code: code, pending: pending, redirectURI: redirectURI)
        } catch let error as OIDCError {
            throw Self.refusal(error, provider: displayName)
        }
        // An email names a person only once the provider verified it (a user could type any address otherwise).
        if rules.usernameClaim == "email", token.claims.bools["email_verified"] == false {
            throw SignInRefusal(
                .invalidUsername, "Your email address at \(displayName) is not verified. Verify it there, then sign in."
            )
        }
        guard let username = token.claims.strings[rules.usernameClaim], AccountService.nameProblem(username) == nil
        else {
            throw SignInRefusal(
                .invalidUsername,
                "Your account at \(displayName) has no \(rules.usernameClaim) the hub can use as a username.")
        }
        let groups = token.claims.lists[rules.roleClaim] ?? token.claims.strings[rules.roleClaim].map { [$0] } ?? []
        // What the sign-in changes is recorded as done by the user signing in.
        return try await AuditActor.$current.withValue(AuditActor(kind: .user, name: username)) {
            let role = try await enter(username: username, groups: groups)
            try await accounts.startSession(
                key: sessionKey, username: username, csrfToken: csrfToken, lifetime: lifetime,
                endsAt: token.expiresAt, idToken: token.raw)
            logger.info("portal sign-in through the OpenID provider", metadata: ["username": "\(username)"])
            return SignedIn(username: username, role: role, next: attempt.next, endsAt: token.expiresAt)
        }
    }

    /// Sets the user from their groups: created, enabled again, their role and access lists; or, in none of the
    /// groups, disabled. Answers the role.
    private func enter(username: String, groups: [String]) async throws -> Role {
        let existing: User?
        do {
            existing = try await accounts.users.get(username: username)
        } catch let error as DAOError where error.code == .userNotFound {
            existing = nil
        }
        guard let role = rules.role(for: groups) else {
            if existing != nil, try await accounts.users.setDisabledByProvider(username: username, true) {
                try await accounts.endSessions(of: username)
                await accounts.audit.record(
                    action: "user.disable", target: AuditTarget(kind: "user", id: username),
                    change: ["reason": "not in the provider's admin or communicator groups"])
            }
            throw SignInRefusal(
                .notInGroups,
                "Your account at \(displayName) is in none of the groups that may use this portal. "
                    + "Ask the school's IT team.")
        }
        if let user = existing {
            if user.disabled, !user.disabledByProvider {
                throw SignInRefusal(.disabled, "Your portal account is disabled. Ask an admin of the hub.")
            }
            if user.disabledByProvider, try await accounts.users.setDisabledByProvider(username: username, false) {
                await accounts.audit.record(
                    action: "user.enable", target: AuditTarget(kind: "user", id: username),
                    change: ["reason": "back in the provider's groups"])
            }
            if user.role != role {
                try await accounts.users.setRole(username: username, role)
                try await accounts.endSessions(of: username)
                await accounts.audit.record(
                    action: "user.role", target: AuditTarget(kind: "user", id: username),
                    change: AuditChange.edit(
                        before: ["role": .string(user.role.rawValue)], after: ["role": .string(role.rawValue)]))
            }
            if !user.signsInWithProvider { try await accounts.users.markSignedIn(username: username) }
        } else {
            try await addUser(username, role: role)
        }
        try await cube.setAccess(
            of: username, granted: rules.granted(to: groups), managed: rules.managedNodes)
        return role
    }

    /// Adds a user who signs in through the provider (no password); one another sign-in added meanwhile is theirs.
    /// - Throws: `SignInRefusal.invalidUsername` when a live API token has the name (a token of a user's name would
    ///   pass every access list naming the user); `DAOError`.
    private func addUser(_ username: String, role: Role) async throws {
        guard try await accounts.tokens.live(named: username) == nil else {
            throw SignInRefusal(.invalidUsername, "An API token is called \(username); ask an admin of the hub.")
        }
        do {
            _ = try await accounts.users.addSignedIn(username: username, role: role)
        } catch let error as DAOError where error.code == .duplicate {
            return
        }
        await accounts.audit.record(
            action: "user.create", target: AuditTarget(kind: "user", id: username),
            change: AuditChange.created(["role": .string(role.rawValue), "sign_in": "oidc"]))
    }

    private static func refusal(_ error: OIDCError, provider: String) -> SignInRefusal {
        let message: String
        switch error.code {
        case .unavailable: message = "\(provider) cannot be reached just now. Try again in a minute."
        case .misconfigured, .insecureEndpoint:
            message =
                "Signing in with \(provider) is not set up correctly: \(error.message). Tell the school's IT team."
        case .tokenRefused: message = "\(provider) did not confirm the sign-in. Sign in again."
        default: message = "The sign-in with \(provider) could not be verified (\(error.message)). Sign in again."
        }
        return SignInRefusal(.provider, message, oidc: error)
    }
}

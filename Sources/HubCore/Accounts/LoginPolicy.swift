import DAO
import HubTime
import Logging
import NIOCore

/// How many failed logins are allowed, and how much password checking runs at once.
public struct LoginLimits: Sendable {
    /// Failed logins of one username within `window` after which it is refused from every address that has
    /// failed too (an address without failures may still try: a stranger cannot lock `admin` out).
    public var perUsername: Int
    /// Failed logins from one address (any username) within `window` after which it is refused.
    public var perAddress: Int
    /// How far back failures count.
    public var window: Duration
    /// Password checks (bcrypt) running at once: by default the size of `NIOThreadPool.singleton`, whose threads
    /// bcrypt occupies.
    public var concurrentChecks: Int
    /// Password checks waiting for one of those; one more is refused at once (`LoginRefusal.busy`).
    public var waitingChecks: Int

    public init(
        perUsername: Int = 5, perAddress: Int = 20, window: Duration = .seconds(60),
        concurrentChecks: Int = NIOSingletons.blockingPoolThreadCountSuggestion,
        waitingChecks: Int = 4 * NIOSingletons.blockingPoolThreadCountSuggestion
    ) {
        self.perUsername = perUsername
        self.perAddress = perAddress
        self.window = window
        self.concurrentChecks = concurrentChecks
        self.waitingChecks = waitingChecks
    }

    /// Failed logins from one IPv6 /48 (any username, any of its addresses) within `window` after which it is
    /// refused: `ClientAddress.siteLimitFactor` times `perAddress`.
    public var perSite: Int { perAddress * ClientAddress.siteLimitFactor }

    /// `window` in whole milliseconds.
    var windowMS: Int64 { window.milliseconds }
}

/// The one login rule every entry point (portal form, HTTP Basic, command line) goes through: failures are
/// counted per username and per client address in the database (every replica counts the same), checked before
/// bcrypt runs, and the bcrypt work itself is bounded (`BcryptGate`).
///
/// A login is refused without a password check when its address (an IPv6 one's /64) has `perAddress` failures in the
/// window (any usernames), an IPv6 address's /48 has `perSite`, or when the username has `perUsername` failures and this address at least one: an address with no
/// failures may always try, so guesses at `admin` from elsewhere never lock the real admin out.
struct LoginPolicy: Sendable {
    let failures: LoginFailureDAO
    let credentials: Credentials
    let limits: LoginLimits

    /// The address key of a caller without a network address (the command line).
    static let localAddress = "local"

    /// The enabled user `username` with `password`, logging in from `address`.
    /// - Throws: `LoginRefusal` (`.throttled` before any password check, `.invalidCredentials` after a failed
    ///   one, `.busy` when the checks are full); `DAOError` when the database fails.
    func logIn(
        username: String, password: String, from address: ClientAddress?,
        logger: Logger
    ) async throws -> Identity {
        // No username or password is this long (64 characters, 72 bytes): refused without a query or a check.
        guard username.utf8.count <= 256, password.utf8.count <= 1_024 else { throw LoginRefusal.invalidCredentials }
        let key = address?.throttleKey ?? Self.localAddress
        let site = address?.siteThrottleKey
        let windowMS = limits.windowMS
        let counts = try await failures.counts(username: username, address: key, site: site, windowMS: windowMS)
        if counts.address >= limits.perAddress || counts.site >= limits.perSite
            || (counts.username >= limits.perUsername && counts.address > 0)
        {
            // debugDescription quotes the name and escapes control characters: it cannot forge a log line.
            logger.notice(
                "login throttled",
                metadata: [
                    "username": "\(username.debugDescription)", "address": "\(key)",
                    "failures_of_username": "\(counts.username)", "failures_from_address": "\(counts.address)",
                    "failures_from_site": "\(counts.site)",
                ])
            let scope =
                counts.address >= limits.perAddress
                ? "from this address"
                : counts.site >= limits.perSite ? "from this network" : "for this username"
            throw LoginRefusal(
                .throttled, "too many failed logins \(scope); try again in a minute",
                retryAfterSeconds: Int(max(1, windowMS / 1000)))
        }
        guard let identity = try await credentials.identity(username: username, password: password) else {
            try await failures.record(username: username, address: key, site: site)
            throw LoginRefusal.invalidCredentials
        }
        // Only when this address failed lately: a successful Basic request costs no write.
        if counts.address > 0 { try await failures.clear(username: username, address: key) }
        return identity
    }

    /// Forgets every failed login of `username`, from anywhere.
    /// - Throws: `DAOError`.
    func unlock(_ username: String) async throws {
        try await failures.clear(username: username)
    }
}

import DAO
import Mongo
import Synchronization

/// The live API tokens held in memory, so a bearer token is checked without a database query on
/// every request.
///
/// Followed like the cube (by the `DatabaseFollower`): a token revoked anywhere stops
/// working everywhere within a second, and at once in the process that revoked it (`refresh`). A
/// secret the memory does not know is looked up in the database (a token created a moment ago
/// elsewhere), and while no follower has confirmed the memory current every lookup goes to the database.
public final class TokenDirectory: Sendable {
    /// How recently the database confirmed the memory.
    public let freshness = Freshness()
    private let tokens: TokenDAO
    private let byHash = Mutex<[String: APIToken]>([:])
    private let loader = SharedLoader()
    /// When this process last noted each token's use (Unix ms), so a busy token costs one write a
    /// minute however late the memory learns of it.
    private let notedUse = Mutex<[ObjectID: Int64]>([:])

    public init(tokens: TokenDAO) {
        self.tokens = tokens
    }

    /// Reloads the live tokens; returns after a load that started after the call.
    /// - Throws: `DAOError` when the load fails (the previous memory stays).
    public func refresh() async throws {
        try await loader.load { [self] in
            let started = ContinuousClock.now
            let live = try await tokens.live()
            byHash.withLock {
                $0 = Dictionary(live.map { ($0.secretHash, $0) }, uniquingKeysWith: { first, _ in first })
            }
            if freshness.isFollowed { freshness.confirm(asOf: started) }
        }
    }

    /// Whether this process should note a use of `token` at `now`: not when it noted one within the
    /// last minute, or the database shows one.
    func shouldNoteUse(of token: APIToken, now: Int64) -> Bool {
        notedUse.withLock { noted in
            let last = max(noted[token.id] ?? 0, token.lastUsedAt ?? 0)
            guard last < now - 60_000 else { return false }
            noted[token.id] = now
            return true
        }
    }

    /// The live token with this hash when the memory holds it and is confirmed current; nil means
    /// "ask the database".
    func token(secretHash: String) -> APIToken? {
        guard freshness.isFollowed, freshness.isCurrent else { return nil }
        return byHash.withLock { $0[secretHash] }
    }
}

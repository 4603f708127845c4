import DAO
import Mongo
import Synchronization

/// The approval rules in force (`ApprovalPolicy`), as an admin set them in the database (`settings.approval`), held
/// in memory and followed like the cube (`DatabaseFollower`): a change made on one replica holds on every replica
/// within a second, and at once on the one that made it. While no follower has confirmed the memory current, each
/// read goes to the database, so a replica never applies rules it cannot vouch for.
///
/// The environment (`APPROVAL_DEFAULTS`, `APPROVAL_GROUP_SIZE`, `APPROVAL_TIMEOUT`) only seeds the stored rules on
/// the first start (`seed()`); from then on the database decides.
public final class ApprovalRules: Sendable {
    /// How recently the database confirmed the memory.
    public let freshness = Freshness()
    private let settings: SettingsDAO
    /// What the first start stores when nothing is stored.
    private let seedPolicy: ApprovalPolicy
    private let policy: Mutex<ApprovalPolicy>
    private let loader = SharedLoader()

    /// Rules over `database`, seeded with `seed` on the first start.
    public init(database: MongoDatabase, seed: ApprovalPolicy) {
        self.settings = SettingsDAO(database: database)
        self.seedPolicy = seed
        self.policy = Mutex(seed)
    }

    /// Stores the seed unless rules are stored already, then loads what is stored.
    /// - Throws: `DAOError`.
    public func seed(now: Int64) async throws {
        try await settings.seedApproval(Self.stored(seedPolicy), now: now)
        try await refresh()
    }

    /// Reloads the stored rules; returns after a load that started after the call.
    /// - Throws: `DAOError` when the load fails (the previous memory stays).
    public func refresh() async throws {
        try await loader.load { [self] in
            let started = ContinuousClock.now
            let stored = try await settings.approval()
            policy.withLock { $0 = Self.policy(stored, over: seedPolicy) }
            if freshness.isFollowed { freshness.confirm(asOf: started) }
        }
    }

    /// The rules in force: from memory while it is confirmed current, else from the database.
    /// - Throws: `DAOError` when the memory is stale and the database cannot be read.
    public func current() async throws -> ApprovalPolicy {
        if !freshness.isFollowed || freshness.isCurrent { return policy.withLock { $0 } }
        return Self.policy(try await settings.approval(), over: seedPolicy)
    }

    /// Stores `policy` as the rules in force, naming the admin who set them; holds here at once.
    /// - Throws: `DAOError`.
    func store(_ newPolicy: ApprovalPolicy, by user: String, now: Int64) async throws {
        try await settings.setApproval(Self.stored(newPolicy), by: user, now: now)
        try await refresh()
    }

    /// `policy` as stored.
    static func stored(_ policy: ApprovalPolicy) -> StoredApprovalSettings {
        StoredApprovalSettings(
            defaults: policy.defaults, groupSize: policy.groupSize,
            timeoutSeconds: policy.timeout.components.seconds)
    }

    /// The policy `stored` holds; `fallback` when nothing (or nothing readable) is stored.
    static func policy(_ stored: StoredApprovalSettings?, over fallback: ApprovalPolicy) -> ApprovalPolicy {
        guard let stored, stored.groupSize >= 1, stored.timeoutSeconds >= 60 else { return fallback }
        return ApprovalPolicy(
            groupSize: stored.groupSize, timeout: .seconds(stored.timeoutSeconds),
            defaults: stored.defaults)
    }
}

import DAO
import FCM
import Logging
import Mongo

/// Whether this process leads a piece of work only one replica may do at a time (the subscription calls of an FCM
/// project, the digests): the replica that holds the work's named lease (`LeaseDAO`) leads. The lease is renewed
/// whenever less than two thirds of it is left; another replica takes over within a third of a lease from one that
/// stopped, at once from one that resigned.
struct Leadership: Sendable {
    /// The lease's name: one per piece of work.
    let key: String
    /// This process's name in the lease.
    let owner: String
    private let keeper: LeaseKeeper<String>
    private let leases: LeaseDAO
    /// Told when this process does not lead (any more).
    private let notLeading: @Sendable () -> Void

    /// Leadership of the lease `key` lasting `lease`, held in `leases` as `owner`; `notLeading` is told each time
    /// `lead()` finds this process does not lead.
    init(
        key: String, owner: String, leases: LeaseDAO, lease: Duration, now: @escaping UnixClock,
        notLeading: @escaping @Sendable () -> Void = {}
    ) {
        self.key = key
        self.owner = owner
        self.leases = leases
        self.notLeading = notLeading
        let leaseMS = lease.milliseconds
        self.keeper = LeaseKeeper(duration: lease, now: now) { due, _ in
            var kept = Set<String>()
            for (key, lease) in due {
                if try await leases.hold(key, owner: lease.owner, leaseMS: leaseMS) != nil { kept.insert(key) }
            }
            return kept
        }
    }

    /// Whether this process holds the lease for at least two thirds of a lease more, renewing it (or taking it when
    /// free) otherwise.
    /// - Throws: `DAOError`.
    func lead() async throws -> Bool {
        let leading = try await keeper.take(key, owner: owner, unlessHeldFor: keeper.durationMS * 2 / 3)
        if !leading { notLeading() }
        return leading
    }

    /// Until when (Unix ms) the lease holds as last confirmed, when this process holds it.
    var until: Int64? {
        keeper.lease(of: key).flatMap { $0.owner == owner && $0.until > 0 ? $0.until : nil }
    }

    /// Gives the lease up, if this process holds it, so another replica may take it at once. When the database
    /// cannot be told, the lease runs out by itself and `logger` says so.
    func resign(logger: Logger) async {
        guard keeper.release(key) != nil else { return }
        do {
            try await leases.release(key, owner: owner)
        } catch {
            logger.warning(
                "a lease could not be given up: another replica takes it when it runs out",
                metadata: ["lease": "\(key)", "error": "\(error)"])
        }
    }
}

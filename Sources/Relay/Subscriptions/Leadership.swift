import DAO
import FCM
import Mongo

/// Whether this process leads the subscription calls of its FCM project: one replica at a time holds the
/// project's lease (`LeaseDAO`), so none applies a subscription twice at once. The lease is renewed whenever less
/// than two thirds of it is left; another replica takes over within a third of a lease from one that stopped.
struct Leadership: Sendable {
    /// The lease's name: one per project.
    let key: String
    /// This process's name in the lease.
    let owner = "reconciler-" + ObjectID().hex
    private let keeper: LeaseKeeper<String>
    private let leases: LeaseDAO
    /// Told when this process does not lead (any more).
    private let notLeading: @Sendable () -> Void

    init(
        key: String, leases: LeaseDAO, lease: Duration, now: @escaping UnixClock,
        notLeading: @escaping @Sendable () -> Void
    ) {
        self.key = key
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

    /// Whether this process holds the project's lease for at least two thirds of a lease more, renewing it (or
    /// taking it when free) otherwise.
    /// - Throws: `DAOError`.
    func lead() async throws -> Bool {
        let leading = try await keeper.take(key, owner: owner, unlessHeldFor: keeper.durationMS * 2 / 3)
        if !leading { notLeading() }
        return leading
    }

    /// Gives the lease up, if this process holds it, so another replica may take it at once.
    func resign() async {
        if keeper.release(key) != nil { try? await leases.release(key, owner: owner) }
    }
}

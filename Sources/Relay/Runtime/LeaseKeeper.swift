import DAO
import FCM
import Synchronization

/// Keeps the leases this process holds in a store every replica shares (messages of the outbox, a project's
/// subscription calls): each lease is taken, renewed before it runs out, and lost when a renewal finds it gone.
///
/// The keeper knows until when each lease holds as last confirmed, so the work done under it asks first whether
/// it holds long enough yet (`lease(of:holdingFor:)`): nothing is started on a lease that may run out before the
/// work is done. What the store is (a field of each message, a named document) is the `renew` closure's.
final class LeaseKeeper<Key: Hashable & Sendable>: Sendable {
    /// Moves the leases `due` on to `until` (Unix ms) in the store, taking those nobody holds; returns the keys
    /// whose lease this process still holds (the others are lost).
    typealias Renew = @Sendable (_ due: [Key: RelayLease], _ until: Int64) async throws -> Set<Key>

    /// How long a lease taken or renewed now lasts, in milliseconds.
    let durationMS: Int64
    private let renew: Renew
    /// Until when a lease holds (Unix ms): its own end, unless it holds while something else does.
    private let end: @Sendable (RelayLease) -> Int64
    private let now: UnixClock
    private let held = Mutex<[Key: RelayLease]>([:])

    /// A keeper of leases lasting `duration`, renewed through `renew`; `end` reads a lease's end (by default its
    /// `until`).
    init(
        duration: Duration, now: @escaping UnixClock,
        end: @escaping @Sendable (RelayLease) -> Int64 = { $0.until }, renew: @escaping Renew
    ) {
        self.durationMS = duration.milliseconds
        self.now = now
        self.end = end
        self.renew = renew
    }

    // MARK: Taking

    /// Holds `key` under `lease`, taken in the store by someone else's command (a claim); the lease replaces any
    /// held already. Returns whether `key` was not held before.
    @discardableResult
    func hold(_ key: Key, _ lease: RelayLease) -> Bool {
        held.withLock { held in
            defer { held[key] = lease }
            return held[key] == nil
        }
    }

    /// Holds `key` under `lease` unless it is held already; returns whether it was not.
    func holdIfFree(_ key: Key, _ lease: RelayLease) -> Bool {
        held.withLock { held in
            guard held[key] == nil else { return false }
            held[key] = lease
            return true
        }
    }

    /// Whether `owner` holds `key` for more than `marginMS` yet, renewing the lease (or taking it when nobody
    /// holds it) through the store otherwise. A lease lost is let go.
    /// - Throws: what `renew` throws; the lease is then as it was.
    func take(_ key: Key, owner: String, unlessHeldFor marginMS: Int64) async throws -> Bool {
        let current = now()
        if let lease = lease(of: key), lease.owner == owner, end(lease) - current > marginMS { return true }
        let until = current + durationMS
        let kept = try await renew([key: RelayLease(owner: owner, until: until)], until).contains(key)
        held.withLock { $0[key] = kept ? RelayLease(owner: owner, until: until) : nil }
        return kept
    }

    // MARK: Asking

    /// Every key held.
    var keys: [Key] {
        held.withLock { Array($0.keys) }
    }

    /// The lease of `key` as last confirmed, whether or not it still holds.
    func lease(of key: Key) -> RelayLease? {
        held.withLock { $0[key] }
    }

    /// The lease of `key` while it holds for at least `marginMS` more, else nil.
    func lease(of key: Key, holdingFor marginMS: Int64) -> RelayLease? {
        let current = now()
        guard let lease = lease(of: key) else { return nil }
        return end(lease) - current >= marginMS ? lease : nil
    }

    // MARK: Renewing

    /// Renews in one call of `renew` every lease with less than `leftBelow(key)` ms of its own left; a lease the
    /// store no longer gives this process stays held but holds no more (its work ends; its last write still
    /// names it). Returns how many were lost, or nil when none was due.
    /// - Throws: what `renew` throws; the leases are then as they were.
    func renewDue(leftBelow: (Key) -> Int64) async throws -> Int? {
        let current = now()
        let due = held.withLock { held in held.filter { $0.value.until - current < leftBelow($0.key) } }
        guard !due.isEmpty else { return nil }
        let until = current + durationMS
        let kept = try await renew(due, until)
        return held.withLock { held -> Int in
            var lost = 0
            for (key, lease) in due where held[key]?.owner == lease.owner {
                if kept.contains(key) {
                    held[key]?.until = until
                } else {
                    held[key]?.until = 0
                    lost += 1
                }
            }
            return lost
        }
    }

    // MARK: Losing

    /// Stops holding `key`, with no call to the store; returns its lease, if it was held.
    @discardableResult
    func release(_ key: Key) -> RelayLease? {
        held.withLock { $0.removeValue(forKey: key) }
    }

    /// Stops holding every key of `keys`, with no call to the store.
    func release(_ keys: some Sequence<Key>) {
        held.withLock { held in for key in keys { held.removeValue(forKey: key) } }
    }
}

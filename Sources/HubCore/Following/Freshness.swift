import Synchronization

/// How recently the database showed an in-memory copy to be current. A copy nobody follows is
/// trusted as it is; once a `DatabaseFollower` runs, a copy it has not confirmed for `maximumAge`
/// (the database is unreachable, or the follower stalled) is no longer trusted.
public final class Freshness: Sendable {
    /// How long a followed copy may go unconfirmed.
    public let maximumAge: Duration
    /// When the database last showed the copy current; nil while no follower runs.
    private let confirmedAt = Mutex<ContinuousClock.Instant?>(nil)

    public init(maximumAge: Duration = .seconds(1)) {
        self.maximumAge = maximumAge
    }

    /// Marks the copy as followed from now on, trusted as of now if it never was confirmed (it was
    /// just loaded); a copy confirmed before keeps its confirmation, so a follower that reconnects
    /// after an outage does not vouch for a copy it has not checked.
    func startFollowing() {
        confirmedAt.withLock { confirmed in
            if confirmed == nil { confirmed = .now }
        }
    }

    /// Records that the database showed no change up to `instant`.
    func confirm(asOf instant: ContinuousClock.Instant) {
        confirmedAt.withLock { confirmed in
            if confirmed.map({ $0 < instant }) ?? true { confirmed = instant }
        }
    }

    /// Whether a follower runs (it made the first confirmation).
    public var isFollowed: Bool { confirmedAt.withLock { $0 != nil } }

    /// Seconds since the database last confirmed the copy; nil while no follower runs.
    public var ageSeconds: Double? {
        confirmedAt.withLock { $0 }.map { (ContinuousClock.now - $0) / .seconds(1) }
    }

    /// Whether the copy may be used now.
    public var isCurrent: Bool {
        guard let confirmed = confirmedAt.withLock({ $0 }) else { return true }
        return ContinuousClock.now - confirmed <= maximumAge
    }
}

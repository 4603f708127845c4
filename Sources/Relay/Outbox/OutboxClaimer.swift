import DAO
import Logging
import Mongo

/// Claims due messages from the outbox for a relay worker (find, lease, read back, in `OutboxDAO.claim`) and
/// holds those it did not hold already: when the worker has room and a poll is due, again at once after a full
/// claim (more are probably due), soon after a message was stored without a lease, and less often while the
/// database fails.
struct OutboxClaimer {
    private let outbox: OutboxDAO
    /// The worker's name: each claim adds a part of its own for its lease.
    private let owner: String
    private let held: HeldMessages
    private let pollInterval: Duration
    private let metrics: RelayMetrics
    private let logger: Logger
    private let now: UnixClock
    private let clock = ContinuousClock()
    /// When the next claim is due, and when the last one started.
    private var nextClaim: ContinuousClock.Instant
    private var lastClaim: ContinuousClock.Instant
    /// The wait after a claim that failed.
    private var backoff: Backoff
    /// The last claim failed (the first failure of a run is logged, not the others).
    private var failing = false

    init(outbox: OutboxDAO, owner: String, held: HeldMessages, pollInterval: Duration, metrics: RelayMetrics,
         logger: Logger, now: @escaping UnixClock) {
        self.outbox = outbox
        self.owner = owner
        self.held = held
        self.pollInterval = pollInterval
        self.metrics = metrics
        self.logger = logger
        self.now = now
        let start = ContinuousClock.now
        self.nextClaim = start
        self.lastClaim = start - pollInterval
        self.backoff = Backoff(first: min(pollInterval * 2, .seconds(10)), cap: .seconds(10))
    }

    /// Whether a claim is due now.
    var isDue: Bool { clock.now >= nextClaim }

    /// How long until the next claim is due.
    var untilDue: Duration { nextClaim - clock.now }

    /// Claims up to `limit` messages; returns those it now holds, and whether the claim was full (the next one is
    /// then due at once). A claim that fails returns none and puts the next off.
    mutating func claim(limit: Int) async -> (messages: [Message], full: Bool) {
        lastClaim = clock.now
        do {
            var claimed: [Message] = [], full = false
            if let batch = try await outbox.claim(owner: owner, now: now(), leaseMS: held.leaseMS, limit: limit,
                                                  excluding: held.leases.keys) {
                metrics.claimed(batch.messages.count)
                let lease = RelayLease(owner: batch.lease, until: batch.leaseUntil)
                claimed = batch.messages.filter { held.hold(claimed: $0, lease: lease) }
                full = batch.messages.count >= limit
            }
            failing = false
            backoff.reset()
            nextClaim = full ? clock.now : clock.now + pollInterval
            return (claimed, full)
        } catch {
            if !failing { logger.warning("claiming from the outbox failed", metadata: ["error": "\(error)"]) }
            failing = true
            nextClaim = clock.now + backoff.next()
            return ([], false)
        }
    }

    /// A message was stored without a lease: claim soon (not more than 20 times a second however many are
    /// stored so).
    mutating func hurry() {
        nextClaim = min(nextClaim, max(clock.now, lastClaim + .milliseconds(50)))
    }
}

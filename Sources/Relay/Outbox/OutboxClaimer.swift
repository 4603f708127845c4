import DAO
import Logging
import Mongo

/// Claims due messages from the outbox for a relay worker (find, lease, read back, in `OutboxDAO.claim`) and
/// holds those it did not hold already; a backlog is walked in slices of due time (`next`), so that a claim's cost
/// stays that of a slice however long the backlog: when the worker has room and a poll is due, again at once after a full
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
    /// While a backlog is walked: the due time (Unix ms) from which the next claim looks, a `slice` at a time;
    /// nil while the outbox keeps up (a claim takes the most overdue messages, wherever they are).
    private var walk: Int64?
    /// When the last claim over the whole outbox ran: while a backlog is walked, one every `sweepInterval` still
    /// finds what is due behind the walk (a message another worker's lease let go, one stored late).
    private var lastSweep: ContinuousClock.Instant

    /// How much of the backlog (due times, in ms) one claim reads while it is walked.
    static let slice: Int64 = 500
    /// How often a claim over the whole outbox runs while a backlog is walked.
    static let sweepInterval: Duration = .seconds(10)
    /// Empty slices one claim passes over at most before it hands back (the worker claims again at once).
    static let slicesPerClaim = 20

    init(
        outbox: OutboxDAO, owner: String, held: HeldMessages, pollInterval: Duration, metrics: RelayMetrics,
        logger: Logger, now: @escaping UnixClock
    ) {
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
        self.lastSweep = start
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
            let (found, more) = try await next(limit: limit)
            if let batch = found {
                metrics.claimed(batch.messages.count)
                let lease = RelayLease(owner: batch.lease, until: batch.leaseUntil)
                claimed = batch.messages.filter { held.hold(claimed: $0, lease: lease) }
                full = batch.messages.count >= limit
            }
            full = full || more
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

    /// The next batch: over the whole outbox while it keeps up (or a sweep is due), else from the walk's slices.
    /// A full claim over the whole outbox starts a walk where it ended. Returns the batch, and whether the walk
    /// passed `slicesPerClaim` empty slices (more may be due: claim again at once).
    private mutating func next(limit: Int) async throws -> (OutboxBatch?, Bool) {
        let time = now()
        let keys = held.leases.keys
        guard var lower = walk, clock.now - lastSweep < Self.sweepInterval else {
            lastSweep = clock.now
            let batch = try await outbox.claim(
                owner: owner, now: time, leaseMS: held.leaseMS, limit: limit,
                excluding: keys)
            if let batch, batch.messages.count >= limit, let last = batch.messages.last?.dueAt {
                walk = min(walk ?? last, last)
            }
            return (batch, false)
        }
        for _ in 0..<Self.slicesPerClaim {
            let upper = min(time, lower + Self.slice)
            if let batch = try await outbox.claim(
                owner: owner, now: time, leaseMS: held.leaseMS, limit: limit,
                excluding: keys, due: lower...upper)
            {
                walk = lower
                return (batch, false)
            }
            if upper >= time {
                walk = nil  // caught up
                return (nil, false)
            }
            lower = upper + 1
        }
        walk = lower
        return (nil, true)
    }

    /// A message was stored without a lease: claim soon (not more than 20 times a second however many are
    /// stored so).
    mutating func hurry() {
        nextClaim = min(nextClaim, max(clock.now, lastClaim + .milliseconds(50)))
    }
}

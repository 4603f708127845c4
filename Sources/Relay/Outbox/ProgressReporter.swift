import DAO
import FCM
import Logging
import Synchronization

/// Keeps a relay worker's progress record (`RelayProgressDAO`) current, and takes over those of workers
/// that died.
///
/// A message the worker sent costs one write of the record, shared with every other message done within
/// `window`, instead of a write of its own. The record is written again every quarter of a lease while
/// nothing changes, which keeps the worker alive; the hand-off learns until when the last write that landed
/// holds, and nothing stored under the record is sent past it. Every quarter of a lease the reporter also
/// takes over the records that stopped being kept alive and hands their unfinished messages back to the
/// outbox; a record is settled once a second hand-back after `settleAfter` found inserts that landed late.
final class ProgressReporter: Sendable {
    private let progress: RelayProgressDAO
    private let outbox: OutboxDAO
    private let handoff: OutboxHandoff
    private let leaseMS: Int64
    private let window: Duration
    private let settleAfterMS: Int64
    private let metrics: RelayMetrics
    private let logger: Logger
    private let now: UnixClock
    /// Told the name of a record another worker took over: nothing stored under it may be sent any more.
    private let lost: @Sendable (String) -> Void
    private let signal = WakeSignal()
    /// The tickets of messages whose insert's outcome is unknown, until handed back.
    private let unsettled = Mutex<[(ticket: DirectRelay, at: Int64)]>([])

    init(
        progress: RelayProgressDAO, outbox: OutboxDAO, handoff: OutboxHandoff, leaseMS: Int64, window: Duration,
        settleAfter: Duration = .seconds(30), metrics: RelayMetrics, logger: Logger,
        now: @escaping UnixClock,
        lost: @escaping @Sendable (String) -> Void
    ) {
        self.progress = progress
        self.outbox = outbox
        self.handoff = handoff
        self.leaseMS = leaseMS
        self.window = window
        self.settleAfterMS = settleAfter.milliseconds
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.lost = lost
    }

    /// Messages were done with: the record is written within `window`.
    func changed() {
        signal.notify()
    }

    /// Writes the record whenever messages are done with, and every quarter of a lease; takes over dead
    /// workers' records at the same pace. Returns when the task is cancelled.
    func run() async {
        let interval = Duration.milliseconds(max(leaseMS / 4, 100))
        let clock = ContinuousClock()
        var nextTakeOver = clock.now
        var written: (owner: String, through: Int64, at: ContinuousClock.Instant)?
        var first = true
        while !Task.isCancelled {
            // The first report at once: the worker takes no message in memory before its record holds.
            if !first, await signal.wait(timeout: interval) { try? await Task.sleep(for: window) }
            first = false
            if Task.isCancelled { return }
            await handBackUnsettled()
            if let current = handoff.progress(now: now()),
                written.map({
                    $0.owner != current.owner || $0.through != current.through
                        || clock.now - $0.at >= interval
                }) ?? true
            {
                if await report(current, until: now() + leaseMS) {
                    written = (current.owner, current.through, clock.now)
                }
            }
            if clock.now >= nextTakeOver {
                nextTakeOver = clock.now + interval
                await takeOverExpired()
            }
        }
    }

    /// The last report of a stopping worker: what it did not finish is for the other workers at once.
    func finish() async {
        await handBackUnsettled()
        guard let current = handoff.progress(now: now()) else { return }
        _ = await report(current, until: now())
    }

    private func report(_ current: (owner: String, through: Int64, since: Int64), until: Int64) async -> Bool {
        do {
            if try await progress.report(
                owner: current.owner, through: current.through, since: current.since,
                until: until, now: now())
            {
                metrics.progressWritten()
                handoff.recordHeld(owner: current.owner, until: until)
                return true
            }
            logger.warning(
                "another worker took over this worker's relay record; it sends none of its messages",
                metadata: ["owner": "\(current.owner)"])
            lost(current.owner)
        } catch {
            logger.warning("writing the relay's progress failed", metadata: ["error": "\(error)"])
        }
        return false
    }

    /// Hands back to the outbox the messages whose insert's outcome was unknown (or that could not be sent on
    /// their record), then lets their tickets go: one command per record and `OutboxDAO.idsPerCommand` tickets.
    private func handBackUnsettled() async {
        let tickets = unsettled.withLock { $0 } + handoff.takeUnsettled()
        guard !tickets.isEmpty else { return }
        var left: [(ticket: DirectRelay, at: Int64)] = []
        for (owner, group) in Dictionary(grouping: tickets, by: \.ticket.owner) {
            for start in stride(from: 0, to: group.count, by: OutboxDAO.idsPerCommand) {
                let chunk = group[start..<min(start + OutboxDAO.idsPerCommand, group.count)]
                let seqs = chunk.map(\.ticket.seq)
                do {
                    let count = try await outbox.handBack(owner: owner, seqs: seqs, since: chunk.map(\.at).min() ?? 0)
                    metrics.handedBack(count)
                    handoff.done(seqs, owner: owner)
                } catch {
                    left += chunk
                }
            }
        }
        if !left.isEmpty { handoff.notify() }
        unsettled.withLock { $0 = left }
    }

    /// Takes over the records of workers that stopped being alive and hands their messages back.
    private func takeOverExpired() async {
        let current = now()
        do {
            var handedBack = 0
            for record in try await progress.takeOverExpired(now: current) {
                let justTaken = record.takenAt == current
                let settles = current - (record.takenAt ?? current) >= settleAfterMS
                guard justTaken || settles else { continue }
                // This worker's own record, if it could not keep it alive: `lost` ignores any other.
                if justTaken { lost(record.owner) }
                handedBack += try await outbox.handBack(record)
                if settles { try await progress.settle(owner: record.owner) }
                if justTaken {
                    logger.notice(
                        "took over the relay record of a worker that stopped",
                        metadata: ["owner": "\(record.owner)", "through": "\(record.through)"])
                }
            }
            if handedBack > 0 {
                metrics.handedBack(handedBack)
                logger.notice("messages handed back to the outbox", metadata: ["count": "\(handedBack)"])
                handoff.notify()
            }
        } catch {
            logger.warning("taking over relay records failed", metadata: ["error": "\(error)"])
        }
    }
}

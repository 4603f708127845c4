import DAO
import Logging
import Mongo
import Synchronization

/// Writes what FCM now has for the subscriptions the reconciler applied, behind its calls: the calls go out at
/// the project's rate while their records follow at the database's pace, in bulk writes
/// (`SubscriptionDAO.applied`), so a backlog reaches FCM as fast as the cap allows even where recording a
/// subscription costs the database more than a call's share of a second.
///
/// Until its record is written a subscription still reads as pending, so the reconciler passes what it reads
/// through `work(in:)`: one FCM has as wanted is left out, one whose wish changed meanwhile is applied from what
/// FCM has. A record written while a read runs may be missing from it, so what a record told is kept until the
/// next read begins (`beginRead`).
///
/// What is held here is only ahead of the database, never instead of it: a process that stops before writing
/// leaves those subscriptions pending, and whoever leads next applies them again (FCM answers 409 or 404,
/// counted as done).
final class SubscriptionRecorder: Sendable {
    /// What FCM has, per subscription with a record held or written since the last read began.
    private final class Ledger: Sendable {
        let known = Mutex<[ObjectID: Known]>([:])
    }

    private struct Known {
        var fcmHas: Bool
        /// Records of the subscription held; 0 once written.
        var records: Int
    }

    private let capacity: Int
    private let ledger = Ledger()
    /// Told whenever records are written, so `waitForRoom` and `drain` look again; one waiter at a time (the
    /// reconciler's loop, or its end).
    private let released: WakeSignal
    private let writes: WriteBehind<TopicSubscription>

    /// - Parameters:
    ///   - window: how long a write waits for more records once one is queued.
    ///   - capacity: how many records may wait before `waitForRoom` holds the calls back.
    init(subscriptions: SubscriptionDAO, window: Duration, capacity: Int, maximumBatch: Int = 512, logger: Logger) {
        self.capacity = max(capacity, 1)
        let released = WakeSignal()
        self.released = released
        self.writes = WriteBehind(window: window, batch: maximumBatch, written: { released.notify() }) {
            [ledger] batch in
            await Self.write(batch, subscriptions: subscriptions, logger: logger)
            ledger.known.withLock { known in
                // Written (or given up on): kept for a read under way, until the next one begins.
                for subscription in batch { known[subscription.id]?.records -= 1 }
            }
        }
    }

    /// How many records are queued or being written.
    var held: Int { writes.held }

    /// Queues the records of `applied`: FCM now has each as its `want`.
    func record(_ applied: [TopicSubscription]) {
        guard !applied.isEmpty else { return }
        ledger.known.withLock { known in
            for subscription in applied {
                let records = known[subscription.id]?.records ?? 0
                known[subscription.id] = Known(fcmHas: subscription.want, records: records + 1)
            }
        }
        // Written even if the reconciler stops: once FCM has them, their record is due.
        writes.record(applied)
    }

    /// Marks the start of a read of pending subscriptions: forgets the records written before it, which the read
    /// sees.
    func beginRead() {
        ledger.known.withLock { known in known = known.filter { $0.value.records > 0 } }
    }

    /// The work in `read` (pending subscriptions as stored, read since the last `beginRead`): without those FCM
    /// has as wanted by a record held or written since, and with FCM's state from such a record where the wish
    /// changed.
    func work(in read: [TopicSubscription]) -> [TopicSubscription] {
        ledger.known.withLock { known in
            read.compactMap { subscription in
                guard let fcmHas = known[subscription.id]?.fcmHas else { return subscription }
                if fcmHas == subscription.want { return nil }
                var changed = subscription
                changed.applied = fcmHas
                return changed
            }
        }
    }

    /// Drops what the records tell about FCM (their writes go on): for a process that stopped leading, since
    /// another may have changed FCM since.
    func forget() {
        ledger.known.withLock { $0 = [:] }
    }

    /// Returns once fewer than `capacity` records are held, or once cancelled.
    func waitForRoom() async {
        while held >= capacity, !Task.isCancelled {
            await released.wait(timeout: .seconds(1))
        }
    }

    /// Returns once every record queued so far is written (or given up on), after `timeout`, or once cancelled.
    func drain(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while held > 0, !Task.isCancelled {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            await released.wait(timeout: min(left, .seconds(1)))
        }
    }

    /// Writes `batch`, trying again a few times when the database fails; given up on, its subscriptions stay
    /// pending and are applied again (FCM counts that as done).
    private static func write(_ batch: [TopicSubscription], subscriptions: SubscriptionDAO, logger: Logger) async {
        let written = await WriteRetry.run("recording applied subscriptions failed", logger: logger) {
            try await subscriptions.applied(batch)
        }
        if written { return }
        logger.error(
            "applied subscriptions could not be recorded; they stay pending and are applied again",
            metadata: ["subscriptions": "\(batch.count)"])
    }
}

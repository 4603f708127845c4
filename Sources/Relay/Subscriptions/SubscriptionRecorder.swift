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
    private struct State {
        /// Records to write, oldest first, from `head` on.
        var queue: [TopicSubscription] = []
        var head = 0
        /// Records queued or being written.
        var held = 0
        /// What FCM has, per subscription with a record held or written since the last read began.
        var known: [ObjectID: Known] = [:]
        var writing = false
    }

    private struct Known {
        var fcmHas: Bool
        /// Records of the subscription held; 0 once written.
        var records: Int
    }

    private let subscriptions: SubscriptionDAO
    private let window: Duration
    private let capacity: Int
    private let maximumBatch: Int
    private let logger: Logger
    private let state = Mutex(State())
    /// Told whenever records are written, so `waitForRoom` and `drain` look again; one waiter at a time (the
    /// reconciler's loop, or its end).
    private let released = WakeSignal()

    /// - Parameters:
    ///   - window: how long a write waits for more records once one is queued.
    ///   - capacity: how many records may wait before `waitForRoom` holds the calls back.
    init(subscriptions: SubscriptionDAO, window: Duration, capacity: Int, maximumBatch: Int = 512, logger: Logger) {
        self.subscriptions = subscriptions
        self.window = window
        self.capacity = max(capacity, 1)
        self.maximumBatch = max(maximumBatch, 1)
        self.logger = logger
    }

    /// How many records are queued or being written.
    var held: Int { state.withLock { $0.held } }

    /// Queues the records of `applied`: FCM now has each as its `want`.
    func record(_ applied: [TopicSubscription]) {
        guard !applied.isEmpty else { return }
        let startsWriter = state.withLock { state -> Bool in
            state.queue.append(contentsOf: applied)
            state.held += applied.count
            for subscription in applied {
                let records = state.known[subscription.id]?.records ?? 0
                state.known[subscription.id] = Known(fcmHas: subscription.want, records: records + 1)
            }
            defer { state.writing = true }
            return !state.writing
        }
        // Not a child task: once FCM has them, their record is written even if the reconciler stops.
        if startsWriter { Task { await writeWhileQueued() } }
    }

    /// Marks the start of a read of pending subscriptions: forgets the records written before it, which the read
    /// sees.
    func beginRead() {
        state.withLock { state in state.known = state.known.filter { $0.value.records > 0 } }
    }

    /// The work in `read` (pending subscriptions as stored, read since the last `beginRead`): without those FCM
    /// has as wanted by a record held or written since, and with FCM's state from such a record where the wish
    /// changed.
    func work(in read: [TopicSubscription]) -> [TopicSubscription] {
        state.withLock { state in
            read.compactMap { subscription in
                guard let fcmHas = state.known[subscription.id]?.fcmHas else { return subscription }
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
        state.withLock { $0.known = [:] }
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

    private func writeWhileQueued() async {
        while true {
            try? await Task.sleep(for: window)
            let batch = state.withLock { state -> [TopicSubscription] in
                let end = min(state.head + maximumBatch, state.queue.count)
                defer {
                    state.head = end
                    if state.head == state.queue.count {
                        state.queue = []
                        state.head = 0
                    } else if state.head > 4_096, state.head * 2 > state.queue.count {
                        state.queue.removeFirst(state.head)
                        state.head = 0
                    }
                }
                return Array(state.queue[state.head..<end])
            }
            if !batch.isEmpty {
                await write(batch)
                release(batch)
            }
            let done = state.withLock { state -> Bool in
                guard state.head == state.queue.count else { return false }
                state.writing = false
                return true
            }
            if done { return }
        }
    }

    /// Forgets `batch`'s records (written or given up on) and wakes whoever waited for room or for none.
    private func release(_ batch: [TopicSubscription]) {
        state.withLock { state in
            state.held -= batch.count
            for subscription in batch {
                // Written (or given up on): kept for a read under way, until the next one begins.
                state.known[subscription.id]?.records -= 1
            }
        }
        released.notify()
    }

    /// Writes `batch`, trying again a few times when the database fails; given up on, its subscriptions stay
    /// pending and are applied again (FCM counts that as done).
    private func write(_ batch: [TopicSubscription]) async {
        let written = await WriteRetry.run("recording applied subscriptions failed", logger: logger) {
            try await subscriptions.applied(batch)
        }
        if written { return }
        logger.error(
            "applied subscriptions could not be recorded; they stay pending and are applied again",
            metadata: ["subscriptions": "\(batch.count)"])
    }
}

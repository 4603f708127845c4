import DAO
import Logging
import Mongo
import Synchronization

/// Records what the relay's sends come to as they happen, gathered into shared bulk writes (a group commit,
/// as `InsertBatcher` does for inserts): a write made while none is under way waits `window` for others,
/// then all of them go in one command; writes made meanwhile go in the next. Writes of one message merge
/// into one statement. So a component FCM took is on record within about `window` plus a round trip, and
/// the commands do not grow with the number of sends in flight.
final class OutcomeRecorder: Sendable {
    private struct State {
        var pending: [ObjectID: RelayUpdate] = [:]
        var order: [ObjectID] = []
        var writing = false
        var idle: [CheckedContinuation<Void, Never>] = []
    }

    private let outbox: OutboxDAO
    private let window: Duration
    private let maximumBatch: Int
    private let metrics: RelayMetrics
    private let logger: Logger
    /// Told the messages whose lease a write ended once it is done, or given up on (`written` false).
    private let ended: @Sendable (_ ids: [ObjectID], _ written: Bool) -> Void
    private let state = Mutex(State())

    init(
        outbox: OutboxDAO, window: Duration, maximumBatch: Int = 512, metrics: RelayMetrics, logger: Logger,
        ended: @escaping @Sendable (_ ids: [ObjectID], _ written: Bool) -> Void = { _, _ in }
    ) {
        self.outbox = outbox
        self.window = window
        self.maximumBatch = max(maximumBatch, 1)
        self.metrics = metrics
        self.logger = logger
        self.ended = ended
    }

    /// Queues `update` for the next write.
    func record(_ update: RelayUpdate) {
        let startsWriter = state.withLock { state -> Bool in
            if state.pending[update.id] != nil {
                state.pending[update.id]?.merge(update)
            } else {
                state.pending[update.id] = update
                state.order.append(update.id)
            }
            defer { state.writing = true }
            return !state.writing
        }
        // Not a child task: a write must not be cancelled with the worker that asked for it.
        if startsWriter { Task { await writeWhilePending() } }
    }

    /// Returns once everything queued so far is written (or given up on).
    func drain() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                guard state.writing else { return true }
                state.idle.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func writeWhilePending() async {
        while true {
            try? await Task.sleep(for: window)
            let batch = state.withLock { state -> [RelayUpdate] in
                let ids = state.order.prefix(maximumBatch)
                state.order.removeFirst(ids.count)
                return ids.compactMap { state.pending.removeValue(forKey: $0) }
            }
            if !batch.isEmpty {
                let written = await write(batch)
                ended(batch.filter(\.endsLease).map(\.id), written)
            }
            let idle = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                guard state.order.isEmpty else { return nil }
                state.writing = false
                defer { state.idle = [] }
                return state.idle
            }
            if let idle {
                for waiter in idle { waiter.resume() }
                return
            }
        }
    }

    /// Writes `batch` in one command, trying again a few times when the database fails; false when it gave up.
    private func write(_ batch: [RelayUpdate]) async -> Bool {
        let recorded = await WriteRetry.run("recording relay outcomes failed", logger: logger) {
            let written = try await outbox.record(batch)
            metrics.recorded(batch.count)
            if written < batch.count {
                logger.warning(
                    "a relay lease ran out before its outcomes were written; others will resend",
                    metadata: ["lost": "\(batch.count - written)"])
            }
        }
        if recorded { return true }
        logger.error(
            "relay outcomes could not be written; their leases run out and others will resend",
            metadata: ["messages": "\(batch.count)"])
        return false
    }
}

import DAO
import Logging
import Mongo

/// Records what the relay's sends come to as they happen, gathered into shared bulk writes (`WriteBehind`), the
/// writes of one message merged into one statement: a component FCM took is on record within about `window` plus a
/// round trip, and the commands do not grow with the number of sends in flight.
final class OutcomeRecorder: Sendable {
    private let writes: WriteBehind<RelayUpdate>

    /// Records through `outbox`, telling `ended` the messages whose lease a write ended once it is done, or given up
    /// on (`written` false).
    init(
        outbox: OutboxDAO, window: Duration, maximumBatch: Int = 512, metrics: RelayMetrics, logger: Logger,
        ended: @escaping @Sendable (_ ids: [ObjectID], _ written: Bool) -> Void = { _, _ in }
    ) {
        self.writes = WriteBehind(window: window, batch: maximumBatch) { [outbox, metrics, logger] updates in
            let batch = Self.merged(updates)
            let written = await Self.write(batch, outbox: outbox, metrics: metrics, logger: logger)
            ended(batch.filter(\.endsLease).map(\.id), written)
        }
    }

    /// Queues `update` for the next write.
    func record(_ update: RelayUpdate) {
        writes.record(update)
    }

    /// Returns once everything queued so far is written (or given up on).
    func drain() async {
        await writes.drain()
    }

    /// `updates` with those of one message merged into one, in the order each message first came.
    static func merged(_ updates: [RelayUpdate]) -> [RelayUpdate] {
        var merged: [ObjectID: RelayUpdate] = [:]
        var order: [ObjectID] = []
        for update in updates {
            if merged[update.id] != nil {
                merged[update.id]?.merge(update)
            } else {
                merged[update.id] = update
                order.append(update.id)
            }
        }
        return order.compactMap { merged[$0] }
    }

    /// Writes `batch` in one command, trying again a few times when the database fails; false when it gave up.
    private static func write(
        _ batch: [RelayUpdate], outbox: OutboxDAO, metrics: RelayMetrics, logger: Logger
    ) async -> Bool {
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

import DAO
import Logging

/// Removes the documents that expired (`ExpiringCollection`: sessions, idempotency keys, used assertions, rate
/// windows, the queues' entries and more) every minute, on every replica: a range delete of each collection's expiry
/// index, which finds nothing the second time, so replicas need no lease between them.
public struct ExpirySweeper: Sendable {
    let sweep: ExpirySweepDAO
    let logger: Logger

    public init(sweep: ExpirySweepDAO, logger: Logger) {
        self.sweep = sweep
        self.logger = logger
    }

    /// Sweeps every `interval` until cancelled (the hub's background task); a failed sweep is logged and tried again
    /// at the next.
    public func loop(every interval: Duration = .seconds(60)) async {
        while !Task.isCancelled {
            do {
                try await sweep.sweep()
            } catch {
                logger.warning("expired documents could not be removed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}

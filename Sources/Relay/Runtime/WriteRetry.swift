import DAO
import Logging

/// The one policy for a write a worker must not stop on (outcomes, deliveries, webhook records and events, applied
/// subscriptions, an acknowledgement's audience): a few attempts, the waits between them from a `Backoff` (half a
/// second, doubling, jittered), each failure logged as a warning. What is left when every attempt failed is the
/// caller's to say (a lease that runs out, a send made again).
enum WriteRetry {
    /// Attempts at most, the first included.
    static let attempts = 4

    /// The waits between attempts.
    static func backoff() -> Backoff { Backoff(first: .milliseconds(500), cap: .seconds(4)) }

    /// Runs `write` until it succeeds, `attempts` times at most, logging each failure as `failure` with `metadata`,
    /// the error and the attempt; whether it succeeded.
    @discardableResult
    static func run(
        _ failure: Logger.Message, logger: Logger, metadata: Logger.Metadata = [:], attempts: Int = attempts,
        _ write: () async throws -> Void
    ) async -> Bool {
        var backoff = backoff()
        for attempt in 1...max(attempts, 1) {
            do {
                try await write()
                return true
            } catch {
                var details = metadata
                details["error"] = "\(error)"
                details["attempt"] = "\(attempt)"
                logger.warning(failure, metadata: details)
                if attempt < attempts { try? await Task.sleep(for: backoff.next()) }
            }
        }
        return false
    }
}

import DAO
import Logging

/// The loop of a worker that takes its work from the database (held-back sends, escalation steps, webhook
/// deliveries): any number of replicas run one each, and nothing tells a worker of another replica's work but the
/// database, so it asks again after a pause when it found none.
enum PollingLoop {
    /// Runs `step` until the task is cancelled: again at once while it says there may be more work, after `idle`
    /// when it found none, and after a growing wait (0.5 s doubling to 30 s) while it throws (the database fails),
    /// each failure logged as `failure`.
    static func run(
        logger: Logger, failure: Logger.Message, idle: () async -> Void,
        step: () async throws -> Bool
    ) async {
        var backoff = Backoff(first: .milliseconds(500), cap: .seconds(30))
        while !Task.isCancelled {
            do {
                let more = try await step()
                backoff.reset()
                if !more { await idle() }
            } catch {
                logger.warning(failure, metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff.next())
            }
        }
    }
}

import DAO
import FCM
import Logging
import Synchronization

/// Shares the pauses FCM asks for between the replicas that relay to one project: a pause this worker's sends
/// ran into is stored for the others (`RelayPauseDAO`), and one another replica stored closes this worker's gate
/// too.
final class SharedPause: Sendable {
    private let pauses: RelayPauseDAO
    private let project: String
    /// The worker's name, stored with its pauses.
    private let owner: String
    /// The worker's gate: a pause stored elsewhere closes it.
    private let gate: RelayGate
    /// How often the stored pause is read.
    private let pollInterval: Duration
    private let metrics: RelayMetrics, logger: Logger
    private let now: UnixClock
    /// The latest pause end this worker stored for the other replicas.
    private let stored = Mutex<Int64>(0)

    init(
        pauses: RelayPauseDAO, project: String, owner: String, gate: RelayGate, pollInterval: Duration,
        metrics: RelayMetrics, logger: Logger, now: @escaping UnixClock
    ) {
        self.pauses = pauses
        self.project = project
        self.owner = owner
        self.gate = gate
        self.pollInterval = pollInterval
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// Reads the pause other replicas stored for the project, every poll interval (less often while the
    /// database fails, so as not to hold its threads). Returns when the task is cancelled.
    func watch() async {
        var backoff = Backoff(first: min(pollInterval * 2, .seconds(10)), cap: .seconds(10))
        while !Task.isCancelled {
            var interval = pollInterval
            do {
                if let until = try await pauses.until(project: project) { gate.pausedElsewhere(until: until) }
                backoff.reset()
            } catch {
                interval = backoff.next()
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Tells the other replicas that FCM asked to pause until `until`, unless this worker told them already.
    func share(until: Int64, reason: FCMError) {
        let isNew = stored.withLock { stored in
            defer { stored = max(stored, until) }
            return until > stored + 250
        }
        guard isNew else { return }
        metrics.paused()
        logger.warning(
            "FCM asked to slow down: the relay to the project pauses",
            metadata: ["project": "\(project)", "until_ms": "\(until)", "error": "\(reason)"])
        Task {
            do {
                try await pauses.pause(
                    project: project, until: until, reason: reason.description, by: owner, now: now())
            } catch {
                logger.warning("storing a relay pause failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

import DAO
import Logging

/// Records FCM's answers to the fan-out's sends in bulk (`WriteBehind`): answers wait at most `window` (or until
/// `batch` of them are queued) and are inserted together, each delivery written once with its answer
/// (`DeliveryDAO.record`; the devices FCM called gone are the lane's, `GoneDevices`). So a process killed mid fan-out
/// re-sends only what was in flight or answered within the last window. Writes do not need the message's lease: what FCM answered stays true.
/// A write carries at most `batch` answers: on the embedded database an insert of 500 took a third of a second, which
/// every other command of the relay (a room post's first reads among them) waited behind.
final class DeliveryRecorder: Sendable {
    private let writes: WriteBehind<DeliveryOutcome>

    init(
        deliveries: DeliveryDAO, window: Duration = .milliseconds(100), batch: Int = 100, logger: Logger
    ) {
        self.writes = WriteBehind(window: window, batch: batch) { [deliveries, logger] outcomes in
            await Self.write(outcomes, deliveries: deliveries, logger: logger)
        }
    }

    /// Queues `outcome` for the next write.
    func record(_ outcome: DeliveryOutcome) {
        writes.record(outcome)
    }

    /// Returns once every answer queued before the call is written (or given up on).
    func drain() async {
        await writes.drain()
    }

    /// Writes `outcomes`, trying again a few times when the database fails.
    private static func write(
        _ outcomes: [DeliveryOutcome], deliveries: DeliveryDAO, logger: Logger
    ) async {
        let written = await WriteRetry.run("recording deliveries failed", logger: logger) {
            try await deliveries.record(outcomes)
        }
        if written { return }
        logger.error(
            "deliveries could not be recorded; their devices may be sent to again",
            metadata: ["deliveries": "\(outcomes.count)"])
    }
}

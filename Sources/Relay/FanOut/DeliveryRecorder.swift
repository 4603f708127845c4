import DAO
import Logging

/// Records FCM's answers to the fan-out's sends in bulk: answers wait at most `window` (or until `batch` of them
/// are queued) and are inserted together, each delivery written once with its answer (`DeliveryDAO.record`); the
/// devices FCM called gone are marked unregistered in the same round. So a process killed mid fan-out re-sends only what was in flight or
/// answered within the last window. Writes do not need the message's lease: what FCM answered stays true.
final class DeliveryRecorder: Sendable {
    private let writes: WriteBehind<DeliveryOutcome>

    init(
        deliveries: DeliveryDAO, devices: DeviceDAO, window: Duration = .milliseconds(100), batch: Int = 500,
        logger: Logger
    ) {
        self.writes = WriteBehind(window: window, batch: batch) { [deliveries, devices, logger] outcomes in
            await Self.write(outcomes, deliveries: deliveries, devices: devices, logger: logger)
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

    /// Writes `outcomes` (and marks the gone devices), trying again a few times when the database fails.
    private static func write(
        _ outcomes: [DeliveryOutcome], deliveries: DeliveryDAO, devices: DeviceDAO, logger: Logger
    ) async {
        let gone = outcomes.compactMap { $0.state == .unregistered ? $0.delivery.registration : nil }
        let written = await WriteRetry.run("recording deliveries failed", logger: logger) {
            try await deliveries.record(outcomes)
            if !gone.isEmpty { try await devices.markUnregistered(registrations: gone) }
        }
        if written { return }
        logger.error(
            "deliveries could not be recorded; their devices may be sent to again",
            metadata: ["deliveries": "\(outcomes.count)"])
    }
}

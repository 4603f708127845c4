import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The escalation worker, run for the hub's life beside the relay whose sender, gate and send rate it shares: re-sends
/// to the devices that have not acknowledged a message that asked them to, then `message.unacknowledged`. At graceful
/// shutdown it stops at its next page and gives its message back.
struct EscalationService: Service {
    let worker: EscalationWorker

    /// The worker sending through `relay`'s outbox worker; nil when that one sends to no device.
    init?(relay: RelayService, services: HubServices, logger: Logger) {
        guard
            let worker = EscalationWorker(
                database: services.database, lane: relay.worker.deviceLane,
                webhookSubscribers: services.webhookSubscribers, logger: logger,
                now: services.now)
        else { return nil }
        self.worker = worker
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await worker.run() }
    }
}

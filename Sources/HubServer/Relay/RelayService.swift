import DAO
import FCM
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The outbox worker, run for the hub's life.
///
/// At graceful shutdown the worker stops taking messages, lets the sends under way finish, hands back the
/// leases of the rest and records every outcome; the FCM client's threads stop after (`FCMService`).
struct RelayService: Service {
    let worker: OutboxWorker

    /// The relay `configuration` describes, sending through `fcm`.
    init(configuration: RelayConfiguration, fcm: FCMClient, services: HubServices, logger: Logger) {
        self.worker = OutboxWorker(
            outbox: OutboxDAO(database: services.database), progress: RelayProgressDAO(database: services.database),
            pauses: RelayPauseDAO(database: services.database), handoff: services.outboxHandoff, sender: fcm,
            mapping: configuration.urgency.applied(to: fcm.mappingOptions),
            fanOut: FanOutStores(database: services.database, now: services.now),
            quietHours: QuietHoursStores(database: services.database, now: services.now),
            events: WebhookEventDAO(database: services.database, now: services.now),
            acknowledgements: AckAudience(database: services.database, logger: logger, now: services.now),
            configuration: OutboxWorker.Configuration(concurrency: configuration.concurrency, lease: configuration.lease,
                                                      project: fcm.projectID ?? "-",
                                                      fanOutInFlight: configuration.fanOutInFlight,
                                                      sendRate: configuration.sendRate),
            logger: logger, now: services.now)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await worker.run() }
    }
}

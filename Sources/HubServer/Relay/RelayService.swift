import DAO
import FCM
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The outbox worker, and beside it the senders of what quiet hours held back and of the daily digests (through the
/// worker's gate and pacer), run for the hub's life.
///
/// At graceful shutdown the worker stops taking messages, lets the sends under way finish, hands back the
/// leases of the rest and records every outcome; the FCM client's threads stop after (`FCMService`).
struct RelayService: Service {
    let worker: OutboxWorker
    /// Sends the held-back sends of devices whose quiet hours ended; nil when the worker sends to no device.
    let quietHours: QuietDeferralSender?
    /// Sends the persons' daily digests; nil when the worker sends to no device.
    let digests: DigestSender?

    /// The relay `configuration` describes, sending through `fcm`.
    init(configuration: RelayConfiguration, fcm: FCMClient, services: HubServices, logger: Logger) {
        let quietStores = QuietHoursStores(
            database: services.database,
            now: configuration.quietHoursClock ?? services.now)
        let worker = OutboxWorker(
            outbox: OutboxDAO(database: services.database), progress: RelayProgressDAO(database: services.database),
            pauses: RelayPauseDAO(database: services.database), handoff: services.outboxHandoff, sender: fcm,
            mapping: configuration.urgency.applied(to: fcm.mappingOptions),
            fanOut: FanOutStores(database: services.database, countsUnread: services.countsUnread, now: services.now),
            quietHours: quietStores,
            // The audience first: a webhook consumer told `message.sent` may ask for the report at once.
            observers: [
                AckAudience(database: services.database, logger: logger, now: services.now),
                MessageEvents(
                    events: WebhookEventDAO(
                        database: services.database, subscribers: services.webhookSubscribers, now: services.now),
                    logger: logger, now: services.now),
            ],
            configuration: OutboxWorker.Configuration(
                concurrency: configuration.concurrency, lease: configuration.lease,
                project: fcm.projectID ?? "-",
                fanOutInFlight: configuration.fanOutInFlight,
                sendRate: configuration.sendRate),
            logger: logger, now: services.now)
        self.worker = worker
        self.quietHours = QuietDeferralSender(stores: quietStores, lane: worker.deviceLane, logger: logger)
        self.digests = DigestSender(
            stores: DigestStores(
                database: services.database, policy: services.digestPolicy,
                now: configuration.digestClock ?? services.now),
            lane: worker.deviceLane, logger: logger)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let quietHours { group.addTask { await quietHours.run() } }
                if let digests { group.addTask { await digests.run() } }
                await worker.run()
            }
        }
    }
}

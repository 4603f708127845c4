import DAO
import FCM
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The subscription reconciler, run for the hub's life; the FCM client's threads stop after it (`FCMService`).
struct ReconcilerService: Service {
    /// Subscription calls in flight at once in this process.
    static let concurrency = 16

    let reconciler: SubscriptionReconciler

    /// The reconciler the configuration describes, calling FCM through `fcm`.
    init(configuration: HubConfiguration, fcm: FCMClient, services: HubServices, logger: Logger) {
        let database = services.database
        let devices = services.devices
        self.reconciler = SubscriptionReconciler(
            subscriptions: SubscriptionDAO(database: database), devices: DeviceDAO(database: database),
            rollouts: RolloutDAO(database: database),
            rates: RateWindowDAO(database: database), leases: LeaseDAO(database: database), fcm: fcm.topicSubscriptions,
            project: fcm.projectID ?? "-",
            signal: devices.reconcilerSignal, wishes: { try await devices.topicsByLevel() },
            configuration: SubscriptionReconciler.Configuration(
                rate: configuration.devices.subscriptionRate, concurrency: Self.concurrency,
                lease: configuration.relay.lease, repairInterval: configuration.devices.repairInterval,
                retention: configuration.devices.retention),
            logger: logger, now: services.now)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await reconciler.run() }
    }
}

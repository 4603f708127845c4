import DAO
import FCM
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The subscription reconciler and the HTTP client it calls FCM through, run for the hub's life.
struct ReconcilerService: Service {
    let reconciler: SubscriptionReconciler
    let httpClient: CurlClient

    /// The reconciler the configuration describes, or nil when this process does not talk to FCM
    /// (`RELAY_CONCURRENCY=0`).
    /// - Throws: `CredentialsError` or `RelayConfigurationError` for unusable FCM settings.
    init?(configuration: HubConfiguration, services: HubServices, logger: Logger) throws {
        guard configuration.relay.concurrency > 0 else { return nil }
        let httpClient = CurlClient(configuration: CurlClient.Configuration(threads: 16))
        let fcm: FCMClient
        do {
            fcm = try FCMClient.fromEnvironment(configuration.relay.fcmEnvironment, httpClient: httpClient, logger: logger)
        } catch {
            Task { try? await httpClient.shutdown() }
            throw error
        }
        let database = services.database
        let devices = services.devices
        self.httpClient = httpClient
        self.reconciler = SubscriptionReconciler(
            subscriptions: SubscriptionDAO(database: database), devices: DeviceDAO(database: database),
            rollouts: RolloutDAO(database: database),
            rates: RateWindowDAO(database: database), leases: LeaseDAO(database: database), fcm: fcm.topicSubscriptions, project: fcm.projectID ?? "-",
            signal: devices.reconcilerSignal, wishes: { try await devices.topicsByLevel() },
            configuration: SubscriptionReconciler.Configuration(
                rate: configuration.devices.subscriptionRate, concurrency: 16, lease: configuration.relay.lease,
                repairInterval: configuration.devices.repairInterval, retention: configuration.devices.retention),
            logger: logger)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await reconciler.run() }
        try? await httpClient.shutdown()
    }
}

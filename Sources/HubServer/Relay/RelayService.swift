import DAO
import FCM
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The outbox worker and the HTTP client it sends through, run for the hub's life.
///
/// At graceful shutdown the worker stops taking messages, lets the sends under way finish, hands back the
/// leases of the rest and records every outcome; then the HTTP client's threads stop.
struct RelayService: Service {
    let worker: OutboxWorker
    let httpClient: CurlClient

    /// The relay `configuration` describes, or nil when this process does not relay (`RELAY_CONCURRENCY=0`).
    /// - Throws: `CredentialsError` or `RelayConfigurationError` for unusable FCM settings, so a
    ///   misconfigured hub stops at start-up rather than failing every message.
    init?(configuration: RelayConfiguration, services: HubServices, logger: Logger) throws {
        guard configuration.concurrency > 0 else {
            logger.notice("RELAY_CONCURRENCY=0: this process stores messages but does not relay them")
            return nil
        }
        let httpClient = CurlClient(configuration: CurlClient.Configuration(threads: configuration.concurrency))
        let fcm: FCMClient
        do {
            fcm = try FCMClient.fromEnvironment(configuration.fcmEnvironment, httpClient: httpClient,
                                                payloadLimit: configuration.payloadLimit, logger: logger)
        } catch {
            Task { try? await httpClient.shutdown() }
            throw error
        }
        logger.notice("relay to FCM", metadata: [
            "mode": "\(fcm.configuration.mode.rawValue)", "endpoint": "\(fcm.configuration.endpoint)",
            "project": "\(fcm.projectID ?? "-")",
        ])
        self.httpClient = httpClient
        self.worker = OutboxWorker(
            outbox: services.outbox, progress: services.relayProgress, pauses: services.relayPauses,
            handoff: services.outboxHandoff, sender: fcm,
            mapping: fcm.mappingOptions,
            configuration: OutboxWorker.Configuration(concurrency: configuration.concurrency, lease: configuration.lease,
                                                      project: fcm.projectID ?? "-"),
            logger: logger)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await worker.run() }
        try? await httpClient.shutdown()
    }
}

import Curl
import FCM
import Logging
import ServiceLifecycle

/// The process's one FCM client, shared by the outbox worker and the subscription reconciler: the credentials
/// are read once and one access token serves both. Registered before them, so that at shutdown its HTTP client's
/// threads stop once both have stopped.
struct FCMService: Service {
    /// The client the relay sends through and whose topic subscription calls the reconciler makes.
    let client: FCMClient
    let httpClient: CurlClient

    /// The client `configuration` describes, or nil when this process does not talk to FCM
    /// (`RELAY_CONCURRENCY=0`).
    /// - Throws: `CredentialsError` or `RelayConfigurationError` for unusable FCM settings, so a
    ///   misconfigured hub stops at start-up rather than failing every message.
    init?(configuration: RelayConfiguration, logger: Logger) throws {
        guard configuration.concurrency > 0 else {
            logger.notice("RELAY_CONCURRENCY=0: this process stores messages but does not relay them")
            return nil
        }
        // A thread for each send in flight and for each subscription call.
        let httpClient = CurlClient(
            configuration: CurlClient.Configuration(
                threads: configuration.concurrency + ReconcilerService.concurrency))
        do {
            client = try FCMClient.fromEnvironment(
                configuration.fcmEnvironment, httpClient: httpClient,
                payloadLimit: configuration.payloadLimit, logger: logger)
        } catch {
            Task { try? await httpClient.shutdown() }
            throw error
        }
        self.httpClient = httpClient
        logger.notice(
            "relay to FCM",
            metadata: [
                "mode": "\(client.configuration.mode.rawValue)", "endpoint": "\(client.configuration.endpoint)",
                "project": "\(client.projectID ?? "-")",
            ])
    }

    func run() async throws {
        try? await gracefulShutdown()
        await client.shutdown()
        try? await httpClient.shutdown()
    }
}

import Curl
import HubCore
import Logging
import Relay
import ServiceLifecycle

/// The webhook worker, run for the hub's life beside the message relay: at graceful shutdown it stops claiming, lets
/// the attempts under way finish and records them.
struct WebhookDeliveryService: Service {
    let worker: WebhookWorker

    /// The worker `configuration` describes, over the services' database.
    init(configuration: WebhookConfiguration, services: HubServices, logger: Logger) {
        self.worker = WebhookWorker(
            database: services.database, subscribers: services.webhookSubscribers,
            resolver: WebhookTargets(policy: configuration.policy),
            configuration: configuration.worker, logger: logger, now: services.now)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await worker.run() }
    }
}

/// The relay's view of the SSRF rule: each attempt's address comes from `WebhookAddressPolicy.resolve`, the rule
/// `POST /webhook` applies too.
struct WebhookTargets: WebhookTargetResolving {
    let policy: WebhookAddressPolicy

    func pinnedAddress(for url: String) async throws(WebhookTargetRefused) -> CurlPinnedAddress {
        do {
            let (target, address) = try await policy.resolve(url)
            return CurlPinnedAddress(host: target.host, port: target.port, address: address.description)
        } catch {
            throw WebhookTargetRefused(code: error.code.description, message: error.message)
        }
    }
}

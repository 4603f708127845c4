import HubCore
import Relay

/// Where webhook deliveries may go and how they are retried.
public struct WebhookConfiguration: Sendable {
    /// The rule against server-side request forgery, with the networks `WEBHOOK_ALLOWED_NETWORKS` opens (comma-separated
    /// CIDRs that deliveries may reach although loopback, private or link-local; plain `http://` reaches only these).
    public var policy = WebhookAddressPolicy()
    /// How the webhook worker claims, times out and retries (retried for 24 hours by default).
    public var worker = WebhookWorker.Configuration()

    public init() {}

    /// The webhook configuration the environment gives.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    static func fromEnvironment(_ environment: [String: String]) throws -> WebhookConfiguration {
        var webhooks = WebhookConfiguration()
        if let list = environment["WEBHOOK_ALLOWED_NETWORKS"] {
            do {
                webhooks.policy = try WebhookAddressPolicy(parsing: list)
            } catch let error as AddressRangeError {
                throw ConfigurationError("WEBHOOK_ALLOWED_NETWORKS must list CIDRs separated by commas: \(error)")
            }
        }
        return webhooks
    }
}

import Curl

/// Decides, at each attempt, which address a webhook URL's delivery connects to: it resolves the host and applies
/// the hub's rule against server-side request forgery (HubCore's `WebhookAddressPolicy`, handed in by the server).
public protocol WebhookTargetResolving: Sendable {
    /// The address to connect to for `url`.
    /// - Throws: `WebhookTargetRefused` with the code recorded on the delivery (`address_refused`, `unresolved`,
    ///   `invalid_webhook`).
    func pinnedAddress(for url: String) async throws(WebhookTargetRefused) -> CurlPinnedAddress
}

/// A URL a delivery may not go to now, with the code the deliveries list shows.
public struct WebhookTargetRefused: Error, Sendable, Hashable {
    /// `address_refused`, `unresolved` or `invalid_webhook`.
    public let code: String
    /// A sentence for the log.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

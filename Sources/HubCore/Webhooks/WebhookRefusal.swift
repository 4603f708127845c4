/// Why a webhook request was refused, or a delivery not attempted: a code each adapter maps once.
public typealias WebhookRefusal = Refusal<WebhookRefusalCode>

/// The codes of a `WebhookRefusal`.
public struct WebhookRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case invalidWebhook = "invalid_webhook", webhookNotFound = "webhook_not_found"
        case addressRefused = "address_refused", unresolved
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// A URL or event list the rules refuse (a bad or too long URL, an unknown event, none, a forbidden address).
    public static let invalidWebhook = WebhookRefusalCode(.invalidWebhook)
    /// No webhook has the id.
    public static let webhookNotFound = WebhookRefusalCode(.webhookNotFound)
    /// At delivery: the URL's host resolved to no address it may reach (loopback, private, link-local ...), or plain
    /// HTTP to an address outside `WEBHOOK_ALLOWED_NETWORKS`.
    public static let addressRefused = WebhookRefusalCode(.addressRefused)
    /// At delivery: the URL's host did not resolve.
    public static let unresolved = WebhookRefusalCode(.unresolved)

    /// The code as recorded and answered (`address_refused`).
    public var description: String { value.rawValue }
}

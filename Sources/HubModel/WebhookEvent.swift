/// The events a webhook may subscribe to, named as its deliveries' `type` names them: the catalogue every layer that
/// emits or accepts one uses.
public enum WebhookEvent: String, Sendable, CaseIterable, Comparable {
    /// A message's relay is done: FCM took every part of it.
    case messageSent = "message.sent"
    /// A message's relay ended otherwise: refused, out of retries, or its time to live ran out.
    case messageFailed = "message.failed"
    /// A device acknowledged a message that asked for it.
    case messageAcknowledged = "message.acknowledged"
    /// A message's escalation ended with devices that never acknowledged it.
    case messageUnacknowledged = "message.unacknowledged"

    public static func < (lhs: WebhookEvent, rhs: WebhookEvent) -> Bool { lhs.rawValue < rhs.rawValue }
}

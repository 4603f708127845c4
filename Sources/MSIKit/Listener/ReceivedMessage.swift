/// What a newly stored message asks of the app.
public enum ReceivedMessage: Sendable, Hashable {
    /// An Alert's first arrival: show a notification with this title and body (the message's `title` and `desc`).
    case alert(title: String, body: String, message: Message)
    /// An Information message's first arrival: nothing to show; the message list has a new entry.
    case information(Message)
    /// The sender corrected a message: its texts are replaced in the store (`corrected`); an Alert's notification
    /// is replaced by the system (the same tag or collapse id), an app that shows its own replaces it too.
    case corrected(Message)
    /// The sender withdrew a message: it is removed from the store (and, on Apple platforms, its delivered
    /// notification); the app removes it from what it shows. The message as it was stored.
    case withdrawn(Message)
    /// The person acknowledged a message on another of their devices: it is marked acknowledged in the store
    /// (`Message.acknowledged`) and its delivered notification removed; the app shows it answered.
    case acknowledged(Message)
    /// The person read a message on another of their devices: its delivered notification is removed; `unread` is
    /// the person's count now (the app's badge), when the hub said it.
    case read(Message, unread: Int?)

    /// The stored message (for `withdrawn`, as it was before it was removed).
    public var message: Message {
        switch self {
        case .alert(_, _, let message), .information(let message), .corrected(let message), .withdrawn(let message),
            .acknowledged(let message), .read(let message, _):
            message
        }
    }

    /// The sender's own strings (a chat room's id, a deep link) for the app to act on; empty when it sent none.
    public var data: [String: String] { message.data }
    /// How a message to persons or groups reached this device; nil for a message sent to a subject.
    public var audience: Audience? { message.audience }
    /// The group through which the message reached this device, when it was sent to a group.
    public var groupID: String? { message.groupID }
    /// How urgently the sender wants it seen.
    public var urgency: Urgency { message.urgency }
    /// Whether the sender asks the person to acknowledge it (offering `acknowledgementResponses`).
    public var acknowledgementRequested: Bool { message.acknowledgementRequested }
    /// The answers to offer; empty for a plain acknowledgement.
    public var acknowledgementResponses: [String] { message.acknowledgementResponses }
}

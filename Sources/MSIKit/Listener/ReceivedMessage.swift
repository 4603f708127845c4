/// What a newly stored message asks of the app.
public enum ReceivedMessage: Sendable, Hashable {
    /// An Alert's first arrival: show a notification with this title and body (the message's `title` and `desc`).
    case alert(title: String, body: String, message: Message)
    /// An Information message's first arrival: nothing to show; the message list has a new entry.
    case information(Message)

    /// The stored message.
    public var message: Message {
        switch self {
        case .alert(_, _, let message), .information(let message): message
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

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
}

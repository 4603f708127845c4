/// A text field of a message that the send rules name, by its name on the wire and in the database.
public enum MessageField: String, Sendable, CaseIterable {
    case title, desc, message
    case topicKey = "topic_key"

    /// The most characters (`String.count`) the field may have: the title, the notification text and the message
    /// fit the phones' local store (the spec's SQLite columns); a topic key is 62 (three ObjectIds and two dashes),
    /// with room to spare.
    public var maxLength: Int {
        switch self {
        case .title: 500
        case .desc: 500
        case .message: 1_500
        case .topicKey: 200
        }
    }
}

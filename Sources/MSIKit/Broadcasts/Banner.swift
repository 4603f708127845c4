import Foundation

/// A message the app shows as a banner at launch while it lasts (`MSIClient.activeBroadcasts()`): a downtime
/// notice ("back at 6 pm"), a greeting ("Happy Diwali"), or any message the person may not dismiss. Its texts are in
/// the device's language when the sender translated it.
public struct Banner: Sendable, Hashable {
    /// The kind of an ordinary message.
    public static let generalKind = "general"
    /// The kind of a notice that the service is down or in trouble.
    public static let downtimeKind = "downtime"
    /// The kind of a festive greeting.
    public static let greetingKind = "greeting"

    /// The message, its texts in the device's language (its other languages in `message.translations`).
    public var message: Message

    /// Creates a banner of a message.
    public init(message: Message) {
        self.message = message
    }

    /// The message's key on the hub.
    public var msiKey: String { message.msiKey }
    /// "downtime", "greeting", or a kind of the school's own ("general" for a non-dismissible ordinary message).
    public var kind: String { message.kind }
    /// The title, in the device's language when the message has it.
    public var title: String { message.title }
    /// The short text (a notification's body), in the device's language when the message has it.
    public var desc: String { message.desc }
    /// The text, in the device's language when the message has it.
    public var text: String { message.text }
    /// The language of `title`, `desc` and `text`, when the sender named it.
    public var language: String? { message.language }
    /// The poster's https URL, if any.
    public var image: URL? { message.image }
    /// False when the app keeps the banner until it expires (no close button).
    public var dismissible: Bool { message.dismissible }
    /// When the banner stops being shown; nil when the sender set no expiry (the hub lists it 28 days).
    public var expiresAt: Date? { message.expiresAt }
}

extension Banner {
    /// `text` as a poster URL: https only (what the hub accepts); nil otherwise.
    static func posterURL(_ text: String) -> URL? {
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", url.host != nil else { return nil }
        return url
    }
}

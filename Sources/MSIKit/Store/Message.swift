import Foundation

/// A message as the app keeps it: one row of the design's `Message` table.
public struct Message: Sendable, Hashable, Codable {
    /// The message's identifier on the hub (24 hex digits); the row's unique key.
    public var msiKey: String
    /// The subscription it was sent to: channel id, area id and subject id in hex, joined by "-".
    public var topicKey: String
    /// How it was distributed: `.alert` (with a push notification) or `.information` (silently).
    public var distribution: Distribution
    /// The title, also the push notification's title for an Alert.
    public var title: String
    /// The push notification's body text for an Alert; "" for Information (the design's `desc`).
    public var desc: String
    /// The message text shown in the app (the design's `message`).
    public var text: String
    /// When the hub created it, in Unix milliseconds.
    public var timestamp: Int64

    /// Creates a message from its fields.
    public init(
        msiKey: String, topicKey: String, distribution: Distribution, title: String, desc: String, text: String,
        timestamp: Int64
    ) {
        self.msiKey = msiKey
        self.topicKey = topicKey
        self.distribution = distribution
        self.title = title
        self.desc = desc
        self.text = text
        self.timestamp = timestamp
    }

    /// The channel's id: the topic key's first part.
    public var channelID: String { topicKey.split(separator: "-", maxSplits: 1).first.map(String.init) ?? "" }

    /// `timestamp` as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(timestamp) / 1000) }
}

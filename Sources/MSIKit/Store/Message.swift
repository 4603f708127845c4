import Foundation

/// A message as the app keeps it: one row of the design's `Message` table.
public struct Message: Sendable, Hashable, Codable {
    /// The message's identifier on the hub (24 hex digits); the row's unique key.
    public var msiKey: String
    /// The subscription it was sent to: channel id, area id and subject id in hex, joined by "-"; "" for a message
    /// sent to persons or groups.
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
    /// The sender's own strings for the app (a chat room's id, a deep link); empty when it sent none.
    public var data: [String: String]
    /// How a message to persons or groups reached this device; nil for a message sent to a subject.
    public var audience: Audience?
    /// The group through which the message reached this device, when it was sent to a group.
    public var groupID: String?
    /// How urgently the sender wants it seen (`.active` unless it said otherwise); see `Urgency` for the Android
    /// channels and iOS capabilities the app must declare.
    public var urgency: Urgency
    /// Whether the sender asks the person to acknowledge it: show the message with a way to answer, then call
    /// `MSIClient.acknowledge(msiKey:response:)`. Until then the hub sends it again, more urgently, and at last tells
    /// the school who did not answer.
    public var acknowledgementRequested: Bool
    /// The answers to offer when an acknowledgement is requested ("I'm safe", "I need help"), in the sender's
    /// order; give one of them as `response`. Empty: a plain acknowledgement (an "OK" button).
    public var acknowledgementResponses: [String]

    /// Creates a message from its fields.
    public init(
        msiKey: String, topicKey: String, distribution: Distribution, title: String, desc: String, text: String,
        timestamp: Int64, data: [String: String] = [:], audience: Audience? = nil, groupID: String? = nil,
        urgency: Urgency = .active, acknowledgementRequested: Bool = false, acknowledgementResponses: [String] = []
    ) {
        self.urgency = urgency
        self.acknowledgementRequested = acknowledgementRequested
        self.acknowledgementResponses = acknowledgementResponses
        self.msiKey = msiKey
        self.topicKey = topicKey
        self.distribution = distribution
        self.title = title
        self.desc = desc
        self.text = text
        self.timestamp = timestamp
        self.data = data
        self.audience = audience
        self.groupID = groupID
    }

    /// Reads a message encoded by this or an earlier version (which had no `data`, `audience`, `groupID`, `urgency`
    /// or acknowledgement fields).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            msiKey: try container.decode(String.self, forKey: .msiKey),
            topicKey: try container.decode(String.self, forKey: .topicKey),
            distribution: try container.decode(Distribution.self, forKey: .distribution),
            title: try container.decode(String.self, forKey: .title),
            desc: try container.decode(String.self, forKey: .desc),
            text: try container.decode(String.self, forKey: .text),
            timestamp: try container.decode(Int64.self, forKey: .timestamp),
            data: try container.decodeIfPresent([String: String].self, forKey: .data) ?? [:],
            audience: try container.decodeIfPresent(Audience.self, forKey: .audience),
            groupID: try container.decodeIfPresent(String.self, forKey: .groupID),
            urgency: try container.decodeIfPresent(Urgency.self, forKey: .urgency) ?? .active,
            acknowledgementRequested: try container.decodeIfPresent(Bool.self, forKey: .acknowledgementRequested)
                ?? false,
            acknowledgementResponses: try container.decodeIfPresent([String].self, forKey: .acknowledgementResponses)
                ?? [])
    }

    private enum CodingKeys: String, CodingKey {
        case msiKey, topicKey, distribution, title, desc, text, timestamp, data, audience, groupID, urgency
        case acknowledgementRequested, acknowledgementResponses
    }

    /// The channel's id: the topic key's first part.
    public var channelID: String { topicKey.split(separator: "-", maxSplits: 1).first.map(String.init) ?? "" }

    /// `timestamp` as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(timestamp) / 1000) }
}

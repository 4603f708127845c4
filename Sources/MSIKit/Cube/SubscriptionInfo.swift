/// What the app shows about a message's topic: the names of its channel, area and subject, its level, and
/// whether the device is subscribed (what getSubscriptionInfo gives).
///
/// When the cube does not know (part of) the topic, the names are the placeholders `unknownChannelName`
/// ("Unknown Channel"), `unknownAreaName` ("Unknown Area") and `unknownSubjectName` ("Unknown Subject"), the level
/// is `.optIn` (""), and `isKnown` is false.
public struct SubscriptionInfo: Sendable, Hashable {
    /// The topic key asked about.
    public var topicKey: String
    /// The channel's name, or "Unknown Channel".
    public var channelName: String
    /// The area's name, or "Unknown Area".
    public var areaName: String
    /// The subject's name, or "Unknown Subject".
    public var subjectName: String
    /// The subject's level, or `.optIn` ("") when the subject is unknown.
    public var level: Level
    /// Whether the device is subscribed to the topic (known to the cube or not).
    public var subscribed: Bool
    /// Whether the cube has a subject with this topic key.
    public var isKnown: Bool

    /// Creates the information of a topic.
    public init(
        topicKey: String, channelName: String, areaName: String, subjectName: String, level: Level, subscribed: Bool,
        isKnown: Bool
    ) {
        self.topicKey = topicKey
        self.channelName = channelName
        self.areaName = areaName
        self.subjectName = subjectName
        self.level = level
        self.subscribed = subscribed
        self.isKnown = isKnown
    }

    /// The channel name shown when the topic's channel is not in the cube.
    public static let unknownChannelName = "Unknown Channel"
    /// The area name shown when the topic's area is not in the cube.
    public static let unknownAreaName = "Unknown Area"
    /// The subject name shown when the topic's subject is not in the cube.
    public static let unknownSubjectName = "Unknown Subject"
}

/// One of the device's subscriptions as the hub reports it, with the names of what it subscribes to.
public struct Subscription: Sendable, Hashable, Decodable {
    /// The subscription's key (channel id, area id, subject id in hex, joined by "-").
    public var topicKey: String
    /// The channel's id.
    public var channelID: String
    /// The channel's name.
    public var channelName: String
    /// The area's id.
    public var areaID: String
    /// The area's name.
    public var areaName: String
    /// The subject's id.
    public var subjectID: String
    /// The subject's name.
    public var subjectName: String
    /// How optional the subscription is.
    public var level: Level
    /// How the subject's messages are distributed.
    public var distribution: Distribution
    /// Whether FCM has applied it (the hub subscribes the device's token to the topic in the background).
    public var applied: Bool

    private enum CodingKeys: String, CodingKey {
        case topicKey = "topic_key", channelID = "channel_id", channelName = "channel_name", areaID = "area_id"
        case areaName = "area_name", subjectID = "subject_id", subjectName = "subject_name", level, distribution
        case applied
    }
}

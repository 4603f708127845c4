/// A message as the hub sends it (`GET /message/:msiKey`, `GET /device/:id/messages`); extra fields are ignored.
/// A message to persons or groups has no `topic_key`, and may have `data`, `audience` and `group`; a device's catch-up
/// shows a request for an acknowledgement as `ack` (`responses`, `within_s`).
struct HubMessage: Decodable, Sendable {
    var msiKey: String
    var topicKey: String
    var distribution: Distribution
    var title: String
    var desc: String
    var message: String
    var timestamp: Int64
    var data: [String: String]
    var audience: Audience?
    var groupID: String?
    var urgency: Urgency
    var ack: Ack?

    /// A request for an acknowledgement as the device sees it.
    struct Ack: Decodable, Sendable {
        var responses: [String]

        private enum CodingKeys: String, CodingKey { case responses }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            responses = try container.decodeIfPresent([String].self, forKey: .responses) ?? []
        }
    }

    private enum CodingKeys: String, CodingKey {
        case msiKey = "msi_key", topicKey = "topic_key", distribution, title, desc, message, timestamp, data, audience
        case groupID = "group", urgency, ack
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        msiKey = try container.decode(String.self, forKey: .msiKey)
        topicKey = try container.decodeIfPresent(String.self, forKey: .topicKey) ?? ""
        data = try container.decodeIfPresent([String: String].self, forKey: .data) ?? [:]
        audience = try container.decodeIfPresent(Audience.self, forKey: .audience)
        groupID = try container.decodeIfPresent(String.self, forKey: .groupID)
        distribution = try container.decode(Distribution.self, forKey: .distribution)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? ""
        desc = try container.decodeIfPresent(String.self, forKey: .desc) ?? ""
        message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        timestamp = try container.decode(Int64.self, forKey: .timestamp)
        urgency = try container.decodeIfPresent(Urgency.self, forKey: .urgency) ?? .active
        ack = try container.decodeIfPresent(Ack.self, forKey: .ack)
    }

    /// The message as the app stores it.
    var stored: Message {
        Message(
            msiKey: msiKey, topicKey: topicKey, distribution: distribution, title: title, desc: desc, text: message,
            timestamp: timestamp, data: data, audience: audience, groupID: groupID, urgency: urgency,
            acknowledgementRequested: ack != nil, acknowledgementResponses: ack?.responses ?? [])
    }
}

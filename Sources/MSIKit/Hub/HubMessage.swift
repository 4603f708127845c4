/// A message as the hub sends it (`GET /message/:msiKey`, `GET /device/:id/messages`); extra fields are ignored.
struct HubMessage: Decodable, Sendable {
    var msiKey: String
    var topicKey: String
    var distribution: Distribution
    var title: String
    var desc: String
    var message: String
    var timestamp: Int64

    private enum CodingKeys: String, CodingKey {
        case msiKey = "msi_key", topicKey = "topic_key", distribution, title, desc, message, timestamp
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        msiKey = try container.decode(String.self, forKey: .msiKey)
        topicKey = try container.decode(String.self, forKey: .topicKey)
        distribution = try container.decode(Distribution.self, forKey: .distribution)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? ""
        desc = try container.decodeIfPresent(String.self, forKey: .desc) ?? ""
        message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        timestamp = try container.decode(Int64.self, forKey: .timestamp)
    }

    /// The message as the app stores it.
    var stored: Message {
        Message(
            msiKey: msiKey, topicKey: topicKey, distribution: distribution, title: title, desc: desc, text: message,
            timestamp: timestamp)
    }
}

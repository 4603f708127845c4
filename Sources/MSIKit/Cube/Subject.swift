/// A subject of an area (`areas[i].subjects[j]`): one subscription, one FCM topic.
public struct Subject: Sendable, Hashable, Identifiable, Decodable {
    /// The subject's id: 24 hex digits.
    public var id: String
    /// The subject's name, shown in the app.
    public var name: String
    /// The subject's description.
    public var desc: String
    /// The subscription's key: channel id, area id and subject id in hex, joined by "-" (`topic_key`).
    public var topicKey: String
    /// How optional subscribing is (`opt.level`); `.optIn` when missing.
    public var level: Level
    /// How its messages are distributed (`opt.distribution`); `.information` when missing.
    public var distribution: Distribution

    /// Creates a subject from its fields.
    public init(
        id: String, name: String, desc: String = "", topicKey: String, level: Level = .optIn,
        distribution: Distribution = .information
    ) {
        self.id = id
        self.name = name
        self.desc = desc
        self.topicKey = topicKey
        self.level = level
        self.distribution = distribution
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, desc, topicKey = "topic_key", opt
    }

    private enum OptionKeys: String, CodingKey {
        case level, distribution
    }

    /// Decodes a subject of the legacy JSON, ignoring unknown fields.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        desc = try container.decodeIfPresent(String.self, forKey: .desc) ?? ""
        topicKey = try container.decode(String.self, forKey: .topicKey)
        if container.contains(.opt), try !container.decodeNil(forKey: .opt) {
            let opt = try container.nestedContainer(keyedBy: OptionKeys.self, forKey: .opt)
            level = try opt.decodeIfPresent(Level.self, forKey: .level) ?? .optIn
            distribution = try opt.decodeIfPresent(Distribution.self, forKey: .distribution) ?? .information
        } else {
            level = .optIn
            distribution = .information
        }
    }
}

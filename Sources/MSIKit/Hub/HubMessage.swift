import Foundation

/// A message as the hub sends it (`GET /message/:msiKey`, `GET /device/:id/messages`); extra fields are ignored.
/// A message to persons or groups has no `topic_key`, and may have `data`, `audience` and `group`; a device's catch-up
/// shows a request for an acknowledgement as `ack` (`responses`, `within_s`). A translated message has `lang` and
/// `translations`; a banner `kind`, `dismissible` false, `image` and `expires_at`; a message not to be shown
/// (`display` false) carries `data` for the app's flags.
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
    var language: String?
    var translations: [String: MessageText]
    var image: String?
    var kind: String?
    var dismissible: Bool
    var display: Bool
    /// The sender's expiry (Unix ms).
    var expiresAt: Int64?
    /// The message's `ttl` (seconds) and `send_at` (Unix ms), which end it too.
    var ttl: Int64?
    var sendAt: Int64?

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
        case groupID = "group", urgency, ack, language = "lang", translations, image, kind, dismissible, display
        case expiresAt = "expires_at", ttl, sendAt = "send_at"
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
        language = try container.decodeIfPresent(String.self, forKey: .language)
        translations = (try container.decodeIfPresent([String: MessageText.HubText].self, forKey: .translations) ?? [:])
            .compactMapValues(\.text)
        image = try container.decodeIfPresent(String.self, forKey: .image)
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        dismissible = try container.decodeIfPresent(Bool.self, forKey: .dismissible) ?? true
        display = try container.decodeIfPresent(Bool.self, forKey: .display) ?? true
        expiresAt = try container.decodeIfPresent(Int64.self, forKey: .expiresAt)
        ttl = try container.decodeIfPresent(Int64.self, forKey: .ttl)
        sendAt = try container.decodeIfPresent(Int64.self, forKey: .sendAt)
    }

    /// When the message ends (Unix ms), as the hub judges it: the earlier of its `expires_at` and its `ttl` from its
    /// send time; nil when it has neither.
    var endsAt: Int64? {
        let ttlEnd = ttl.map { max(sendAt ?? timestamp, timestamp) + $0 * 1000 }
        switch (expiresAt, ttlEnd) {
        case (let at?, let end?): return min(at, end)
        case (let at, let end): return at ?? end
        }
    }

    /// The message as a non-display message applies it to the flags; nil for a message to be shown.
    var background: BackgroundMessage? {
        guard !display else { return nil }
        return BackgroundMessage(msiKey: msiKey, timestamp: timestamp, data: data, expiresAt: endsAt)
    }

    /// The message as the app stores it.
    var stored: Message {
        Message(
            msiKey: msiKey, topicKey: topicKey, distribution: distribution, title: title, desc: desc, text: message,
            timestamp: timestamp, data: data, audience: audience, groupID: groupID, urgency: urgency,
            acknowledgementRequested: ack != nil, acknowledgementResponses: ack?.responses ?? [], language: language,
            translations: translations, image: image.flatMap(Banner.posterURL), kind: kind ?? Banner.generalKind,
            dismissible: dismissible, expiresAt: endsAt.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }
}

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
    /// The language of `title`, `desc` and `text` (a primary subtag such as "en" or "hi"); nil when the sender named
    /// none. The library stores a message in the device's language when the sender translated it (`localized(to:)`).
    public var language: String?
    /// The message's texts in its other languages, by language code: the sender's translations, and the sender's own
    /// texts when `title`, `desc` and `text` are a translation; empty for a message in one language.
    public var translations: [String: MessageText]
    /// The poster's https URL, if the sender gave one.
    public var image: URL?
    /// "general", "downtime", "greeting" or a kind of the school's own (`Banner.Kind`).
    public var kind: String
    /// False when the sender asks the app to keep the message (a banner) until it expires.
    public var dismissible: Bool
    /// When the message stops being relevant, if the sender said (its `expires_at`, or what its `ttl` left).
    public var expiresAt: Date?
    /// Whether the sender corrected its texts after it arrived (a correction replaced them).
    public var corrected = false
    /// Whether the person acknowledged it, on this device (`MSIClient.acknowledge`) or on another of theirs (the hub
    /// tells every device of a person who answered): the app shows it answered and offers no button.
    public var acknowledged = false

    /// Creates a message from its fields.
    public init(
        msiKey: String, topicKey: String, distribution: Distribution, title: String, desc: String, text: String,
        timestamp: Int64, data: [String: String] = [:], audience: Audience? = nil, groupID: String? = nil,
        urgency: Urgency = .active, acknowledgementRequested: Bool = false, acknowledgementResponses: [String] = [],
        language: String? = nil, translations: [String: MessageText] = [:], image: URL? = nil,
        kind: String = Banner.generalKind, dismissible: Bool = true, expiresAt: Date? = nil
    ) {
        self.language = language
        self.translations = translations
        self.image = image
        self.kind = kind
        self.dismissible = dismissible
        self.expiresAt = expiresAt
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

    /// Reads a message encoded by this or an earlier version (which had no `data`, `audience`, `groupID`, `urgency`,
    /// acknowledgement, language or banner fields).
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
                ?? [],
            language: try container.decodeIfPresent(String.self, forKey: .language),
            translations: try container.decodeIfPresent([String: MessageText].self, forKey: .translations) ?? [:],
            image: try container.decodeIfPresent(URL.self, forKey: .image),
            kind: try container.decodeIfPresent(String.self, forKey: .kind) ?? Banner.generalKind,
            dismissible: try container.decodeIfPresent(Bool.self, forKey: .dismissible) ?? true,
            expiresAt: try container.decodeIfPresent(Date.self, forKey: .expiresAt))
    }

    private enum CodingKeys: String, CodingKey {
        case msiKey, topicKey, distribution, title, desc, text, timestamp, data, audience, groupID, urgency
        case acknowledgementRequested, acknowledgementResponses, language, translations, image, kind, dismissible
        case expiresAt
    }

    /// The channel's id: the topic key's first part.
    public var channelID: String { topicKey.split(separator: "-", maxSplits: 1).first.map(String.init) ?? "" }

    /// `timestamp` as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(timestamp) / 1000) }

    /// The texts in the language `language`, when it has them (`language` or one of `translations`).
    public func texts(in language: String) -> MessageText? {
        let code = language.lowercased()
        if code == self.language { return MessageText(title: title, desc: desc, text: text) }
        return translations[code]
    }

    /// The message with `title`, `desc` and `text` in the language of `locale` ("hi-IN" reads "hi") when it has a
    /// translation in it; the texts it had move to `translations` under their language, so none is lost. Unchanged
    /// when the locale is unknown, already the message's language, or not among its translations.
    public func localized(to locale: String?) -> Message {
        guard let wanted = MessageText.language(of: locale), wanted != language,
            let translation = translations[wanted]
        else { return self }
        var localized = self
        localized.translations[wanted] = nil
        localized.translations[language ?? MessageText.unnamedLanguage] = MessageText(
            title: title, desc: desc, text: text)
        localized.language = wanted
        (localized.title, localized.desc, localized.text) = (translation.title, translation.desc, translation.text)
        return localized
    }
}

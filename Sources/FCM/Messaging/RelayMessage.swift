import HubModel

/// A stored message as the relay sends it: the input of the FCM mapping.
public struct RelayMessage: Sendable, Hashable {
    /// The spec's two kinds of message (`HubModel.Distribution`, the one type every layer uses).
    public typealias Distribution = HubModel.Distribution

    /// How urgently a message must reach a person (`HubModel.Urgency`, the one type every layer uses).
    public typealias Urgency = HubModel.Urgency

    /// The message's id on phones, 24 hex digits (`msi_key`).
    public var msiKey: String
    /// The FCM topic: channel, area and subject ids joined by "-" (`topic_key`).
    public var topicKey: String
    /// Alert or Information.
    public var distribution: Distribution
    /// The title (`title`).
    public var title: String
    /// The short text of an Alert's pop-up (`desc`).
    public var desc: String
    /// The full text (`message`).
    public var message: String
    /// When the hub accepted the message, Unix milliseconds (`timestamp`).
    public var timestamp: Int64
    /// How long FCM and APNs keep the message for offline devices, in seconds; nil for FCM's default.
    public var ttlSeconds: Int64?
    /// The expiry, Unix milliseconds; when nil and `ttlSeconds` is set, `timestamp + ttlSeconds`.
    public var expiresAt: Int64?
    /// The sender's string values for the app (a message to persons and groups), sent beside the hub's own data.
    public var data: [String: String]
    /// How urgently it must reach phones (`urgency`).
    public var urgency: Urgency
    /// The answers the app offers when the sender asked for an acknowledgement (`ack.responses`; empty: a plain
    /// acknowledgement); nil when it asked for none. The phone gets `ack` and `ack_responses` in the data.
    public var ackResponses: [String]?
    /// The room (a group whose members post) the message was posted in: its notifications share the room's thread
    /// (APNs `thread-id` and `apns-collapse-id`, Android `notification.tag`), so the newest replaces the older ones,
    /// and the data names it (`group`) for the app to open the room; nil for any other message (one notification
    /// each).
    public var room: String?
    /// The room's name, for the notification that says how many of its messages are unread.
    public var roomName: String?
    /// Whether it was stored with `override_preferences` (an admin's choice, or a Forced subject's Alert): with a
    /// time-sensitive or critical urgency, what makes it go past every preference (`breaksThroughPreferences`).
    public var overridePreferences: Bool = false
    /// The language of `title`, `desc` and `message` (`lang`, a primary subtag such as "en"); nil when the message
    /// names none (then the data carries no `lang`).
    public var language: String?
    /// The same texts in other languages (`translations`), in the order the sender gave them.
    public var translations: [Translation]
    /// A poster's https URL (`image`): the notification's image on both platforms, and `image` in the data.
    public var image: String?
    /// What the message is for (`kind`: "downtime", "greeting" or the school's own); nil or "general" for an
    /// ordinary message (then the data carries no `kind`).
    public var kind: String?
    /// Whether the app may let a person dismiss the banner (`dismissible`); false: kept until it expires.
    public var dismissible: Bool
    /// Whether the phone shows anything (`display`); false: a background data message, no notification anywhere.
    public var display: Bool
    /// The sender's own expiry (`expires_at`, Unix ms): the data's `expires_at`, and a bound of `effectiveExpiry`.
    public var senderExpiresAt: Int64?
    /// When the relay maps the message to send it, Unix ms: with `senderExpiresAt`, `android.ttl` is what is left of
    /// the expiry then; nil: counted from `timestamp`.
    public var sendingAt: Int64?

    /// One translation of the message's texts.
    public struct Translation: Sendable, Hashable {
        /// Its language, a primary subtag ("hi", "ta").
        public var language: String
        /// The title, pop-up text and full text in that language.
        public var title: String, desc: String, message: String

        /// A translation into `language`.
        public init(language: String, title: String, desc: String, message: String) {
            (self.language, self.title, self.desc, self.message) = (language, title, desc, message)
        }
    }

    /// A message to relay.
    public init(
        msiKey: String,
        topicKey: String,
        distribution: Distribution,
        title: String,
        desc: String,
        message: String,
        timestamp: Int64,
        ttlSeconds: Int64? = nil,
        expiresAt: Int64? = nil,
        data: [String: String] = [:],
        urgency: Urgency = .active,
        ackResponses: [String]? = nil,
        language: String? = nil,
        translations: [Translation] = [],
        image: String? = nil,
        kind: String? = nil,
        dismissible: Bool = true,
        display: Bool = true,
        senderExpiresAt: Int64? = nil,
        sendingAt: Int64? = nil,
        room: String? = nil,
        roomName: String? = nil
    ) {
        self.room = room
        self.roomName = roomName
        self.language = language
        self.translations = translations
        self.image = image
        self.kind = kind
        self.dismissible = dismissible
        self.display = display
        self.senderExpiresAt = senderExpiresAt
        self.sendingAt = sendingAt
        self.urgency = urgency
        self.ackResponses = ackResponses
        self.msiKey = msiKey
        self.topicKey = topicKey
        self.distribution = distribution
        self.title = title
        self.desc = desc
        self.message = message
        self.timestamp = timestamp
        self.ttlSeconds = ttlSeconds
        self.expiresAt = expiresAt
        self.data = data
    }

    /// The expiry in Unix milliseconds, from `expiresAt` or from `timestamp` and `ttlSeconds`, and never after
    /// `senderExpiresAt`; nil if none is set.
    public var effectiveExpiry: Int64? {
        let relayed = expiresAt ?? ttlSeconds.map { timestamp + $0 * 1000 }
        guard let senderExpiresAt else { return relayed }
        return relayed.map { min($0, senderExpiresAt) } ?? senderExpiresAt
    }

    /// The translation for `language` (a primary subtag); nil when the message has none, or it is the main language.
    public func translation(for language: String?) -> Translation? {
        guard let language, language != self.language else { return nil }
        return translations.first { $0.language == language }
    }

    /// Whether it ignores quiet hours, digests, `off` and mutes (`PreferencePolicy`).
    public var breaksThroughPreferences: Bool {
        PreferencePolicy.breaksThrough(urgency: urgency, overridePreferences: overridePreferences)
    }

    /// Whether the message must no longer be sent at `now` (Unix milliseconds).
    public func isExpired(at now: Int64) -> Bool {
        effectiveExpiry.map { now >= $0 } ?? false
    }
}

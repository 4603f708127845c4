/// A stored message as the relay sends it: the input of the FCM mapping.
public struct RelayMessage: Sendable, Hashable {
    /// The spec's two kinds of message.
    public enum Distribution: String, Sendable, Hashable, CaseIterable {
        /// A pop-up plus data: two FCM requests.
        case alert = "Alert"
        /// Data only, silently: one FCM request.
        case information = "Information"
    }

    /// How urgently a message must reach a person: APNs' interruption level and an Android channel
    /// (`FCMMapping`), and whether a device's quiet hours hold it back. The hub's `urgency` values.
    public enum Urgency: String, Sendable, Hashable, CaseIterable, Comparable {
        /// Into the notification list silently, without lighting the screen.
        case passive
        /// An ordinary notification: the default.
        case active
        /// Breaks through Focus modes and quiet hours.
        case timeSensitive = "time-sensitive"
        /// Sounds even when the phone is muted (on iOS only with Apple's entitlement, `APNS_CRITICAL_ALERTS`).
        case critical

        /// A re-send's urgency: one level up, and at least `timeSensitive`.
        public var escalated: Urgency {
            switch self {
            case .passive, .active: .timeSensitive
            case .timeSensitive, .critical: .critical
            }
        }

        /// Whether the phone should be woken at once: active and above (APNs priority 10, Android `HIGH`).
        public var isImmediate: Bool { self != .passive }

        /// Orders the levels from passive to critical.
        public static func < (lhs: Urgency, rhs: Urgency) -> Bool {
            lhs.rank < rhs.rank
        }

        private var rank: Int {
            switch self {
            case .passive: 0
            case .active: 1
            case .timeSensitive: 2
            case .critical: 3
            }
        }
    }

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
        ackResponses: [String]? = nil
    ) {
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

    /// The expiry in Unix milliseconds, from `expiresAt` or from `timestamp` and `ttlSeconds`; nil if neither.
    public var effectiveExpiry: Int64? {
        expiresAt ?? ttlSeconds.map { timestamp + $0 * 1000 }
    }

    /// Whether the message must no longer be sent at `now` (Unix milliseconds).
    public func isExpired(at now: Int64) -> Bool {
        effectiveExpiry.map { now >= $0 } ?? false
    }
}

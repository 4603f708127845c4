import Foundation

/// A stored message as the relay sends it: the input of the FCM mapping.
public struct RelayMessage: Sendable, Hashable {
    /// The spec's two kinds of message.
    public enum Distribution: String, Sendable, Hashable, CaseIterable {
        /// A pop-up plus data: two FCM requests.
        case alert = "Alert"
        /// Data only, silently: one FCM request.
        case information = "Information"
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
        expiresAt: Int64? = nil
    ) {
        self.msiKey = msiKey
        self.topicKey = topicKey
        self.distribution = distribution
        self.title = title
        self.desc = desc
        self.message = message
        self.timestamp = timestamp
        self.ttlSeconds = ttlSeconds
        self.expiresAt = expiresAt
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

/// One of the spec's "components": one FCM request of a message.
public enum FCMComponent: String, Sendable, Hashable, CaseIterable {
    /// An Alert's pop-up: `notification` {title, body} with `data` {msi_key}.
    case notification
    /// The data the app stores: every field of the message as strings, delivered silently.
    case data
}

/// One request body for `POST /v1/projects/{project_id}/messages:send`.
public struct FCMRequest: Sendable, Hashable {
    /// Which component of the message this is.
    public var component: FCMComponent
    /// The JSON body, UTF-8.
    public var body: [UInt8]
    /// The payload size as the mapping measures it (see `FCMMappingOptions.payloadLimit`).
    public var payloadSize: Int
    /// Whether text was cut to fit the payload limit (the data then carries `truncated: "true"`).
    public var isTruncated: Bool

    /// A request body; the mapping makes these.
    public init(component: FCMComponent, body: [UInt8], payloadSize: Int, isTruncated: Bool) {
        self.component = component
        self.body = body
        self.payloadSize = payloadSize
        self.isTruncated = isTruncated
    }
}

/// The choices the mapping leaves to configuration.
public struct FCMMappingOptions: Sendable, Hashable {
    /// FCM's strictest documented payload limit for topic messages.
    public static let defaultPayloadLimit = 2048
    /// FCM's longest time to live, 4 weeks; longer ttls are sent as this.
    public static let maximumTTLSeconds: Int64 = 2_419_200

    /// Sets `validate_only`: FCM checks the request and sends nothing (`FCM_MODE=validate`).
    public var validateOnly: Bool
    /// The most payload bytes a request may carry: the compact JSON of its `data` object plus that of its
    /// `notification` object, as UTF-8. Over it, text is cut at a character boundary.
    public var payloadLimit: Int

    /// Options; the defaults send for real with a 2048-byte payload limit.
    public init(validateOnly: Bool = false, payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit) {
        self.validateOnly = validateOnly
        self.payloadLimit = payloadLimit
    }
}

/// The FCM mapping: the spec's components, in FCM HTTP v1 form. Pure: no clock, no I/O.
public enum FCMMapping {
    /// The request bodies for `message`: an Alert's notification and data components, in that order, or an
    /// Information's data component alone. See docs/fcm-mapping.md for the table.
    public static func requests(for message: RelayMessage, options: FCMMappingOptions = FCMMappingOptions())
        -> [FCMRequest]
    {
        switch message.distribution {
        case .alert:
            [notificationComponent(message, options), dataComponent(message, options)]
        case .information:
            [dataComponent(message, options)]
        }
    }

    /// The notification component: a pop-up with the message's key, so the app can open it.
    private static func notificationComponent(_ message: RelayMessage, _ options: FCMMappingOptions) -> FCMRequest {
        var notification = Wire.Notification(title: message.title, body: message.desc)
        var data = ["msi_key": message.msiKey]
        var truncated = false
        if payloadSize(data: data, notification: notification) > options.payloadLimit {
            truncated = true
            data["truncated"] = "true"
            let fits = { (candidate: Wire.Notification) in
                payloadSize(data: data, notification: candidate) <= options.payloadLimit
            }
            // The body (desc) goes first: the title is what a person reads on the lock screen.
            let title = notification.title
            let body = cut(notification.body) { fits(Wire.Notification(title: title, body: $0)) }
            let cutTitle = cut(title) { fits(Wire.Notification(title: $0, body: body)) }
            notification = Wire.Notification(title: cutTitle, body: body)
        }
        var headers = ["apns-priority": "10"]
        headers.merge(expirationHeaders(message)) { $1 }
        let wire = Wire.Message(
            topic: message.topicKey,
            notification: notification,
            data: data,
            android: Wire.Android(priority: "HIGH", ttl: androidTTL(message), notification: .init(sound: "default")),
            apns: Wire.APNS(headers: headers, payload: .init(aps: .init(sound: "default", contentAvailable: nil)))
        )
        let size = payloadSize(data: data, notification: notification)
        return request(.notification, wire, options, size: size, truncated)
    }

    /// The data component: every field as a string, delivered silently (an APNs background push).
    private static func dataComponent(_ message: RelayMessage, _ options: FCMMappingOptions) -> FCMRequest {
        var data = [
            "msi_key": message.msiKey,
            "topic_key": message.topicKey,
            "dist": message.distribution.rawValue,
            "title": message.title,
            "desc": message.desc,
            "message": message.message,
            "timestamp": String(message.timestamp),
        ]
        var truncated = false
        if payloadSize(data: data, notification: nil) > options.payloadLimit {
            truncated = true
            data["truncated"] = "true"
            // The full text stays at GET /message/:msiKey; the phone fetches it when it sees `truncated`.
            for field in ["message", "desc", "title"] {
                data[field] = cut(data[field] ?? "") { candidate in
                    var trial = data
                    trial[field] = candidate
                    return payloadSize(data: trial, notification: nil) <= options.payloadLimit
                }
            }
        }
        // APNs refuses a background push whose priority is not 5; FCM passes the refusal on.
        var headers = ["apns-push-type": "background", "apns-priority": "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        let wire = Wire.Message(
            topic: message.topicKey,
            notification: nil,
            data: data,
            android: Wire.Android(priority: "HIGH", ttl: androidTTL(message), notification: nil),
            apns: Wire.APNS(headers: headers, payload: .init(aps: .init(sound: nil, contentAvailable: 1)))
        )
        return request(.data, wire, options, size: payloadSize(data: data, notification: nil), truncated)
    }

    private static func request(
        _ component: FCMComponent,
        _ message: Wire.Message,
        _ options: FCMMappingOptions,
        size: Int,
        _ truncated: Bool
    ) -> FCMRequest {
        let body = Wire.SendRequest(message: message, validateOnly: options.validateOnly ? true : nil)
        return FCMRequest(component: component, body: encode(body), payloadSize: size, isTruncated: truncated)
    }

    /// `android.ttl`: "<seconds>s", at most 4 weeks.
    private static func androidTTL(_ message: RelayMessage) -> String? {
        guard let ttl = message.ttlSeconds ?? message.expiresAt.map({ max(0, ($0 - message.timestamp + 999) / 1000) })
        else { return nil }
        return "\(min(max(0, ttl), FCMMappingOptions.maximumTTLSeconds))s"
    }

    /// `apns-expiration`: the expiry in Unix seconds ("0" for a ttl of 0: deliver once, never store).
    private static func expirationHeaders(_ message: RelayMessage) -> [String: String] {
        if message.ttlSeconds == 0 { return ["apns-expiration": "0"] }
        guard let expiry = message.effectiveExpiry else { return [:] }
        return ["apns-expiration": String(max(0, expiry / 1000))]
    }

    /// The payload size: compact JSON of `data`, plus compact JSON of `notification` when there is one.
    static func payloadSize(data: [String: String], notification: Wire.Notification?) -> Int {
        encode(data).count + (notification.map { encode($0).count } ?? 0)
    }

    /// The longest prefix of `text`, in whole Characters, for which `fits` holds ("" if none does).
    private static func cut(_ text: String, fits: (String) -> Bool) -> String {
        if fits(text) { return text }
        let characters = Array(text)
        // Longer prefixes never measure smaller, so the fitting lengths are 0..<n for some n: binary search.
        var low = 0
        var high = characters.count
        while low < high {
            let middle = (low + high + 1) / 2
            if fits(String(characters[..<middle])) {
                low = middle
            } else {
                high = middle - 1
            }
        }
        return String(characters[..<low])
    }

    private static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs of strings and integers cannot fail.
        return (try? Array(encoder.encode(value))) ?? []
    }
}

/// FCM HTTP v1's JSON, the parts the mapping uses.
enum Wire {
    struct SendRequest: Encodable {
        var message: Message
        var validateOnly: Bool?

        enum CodingKeys: String, CodingKey {
            case message
            case validateOnly = "validate_only"
        }
    }

    struct Message: Encodable {
        var topic: String
        var notification: Notification?
        var data: [String: String]
        var android: Android
        var apns: APNS
    }

    struct Notification: Encodable {
        var title: String
        var body: String
    }

    struct Android: Encodable {
        var priority: String
        var ttl: String?
        var notification: AndroidNotification?
    }

    struct AndroidNotification: Encodable {
        var sound: String
    }

    struct APNS: Encodable {
        var headers: [String: String]
        var payload: Payload
    }

    struct Payload: Encodable {
        var aps: APS
    }

    struct APS: Encodable {
        var sound: String?
        var contentAvailable: Int?

        enum CodingKeys: String, CodingKey {
            case sound
            case contentAvailable = "content-available"
        }
    }
}

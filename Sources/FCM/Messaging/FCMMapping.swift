import JSONText

/// The FCM mapping: the spec's components, in FCM HTTP v1 form. Pure: no clock, no I/O.
public enum FCMMapping {
    /// The request bodies for `message`: an Alert's notification and data components, in that order, or an
    /// Information's data component alone. See docs/fcm-mapping.md for the table.
    ///
    /// With `excluding` topics (the quiet-hours topics of windows quiet now), each request goes to the condition
    /// `'topic' in topics && !('q' in topics) ...` instead of the topic: the devices subscribed to one of them are
    /// left out (and sent to by token when their quiet hours end). FCM allows five topics in a condition, so only the
    /// first `maximumExcludedTopics` are left out; the devices of the others get the message at once.
    public static func requests(for message: RelayMessage, options: FCMMappingOptions = FCMMappingOptions(),
                                excluding: [String] = []) -> [FCMRequest]
    {
        let target: Target = excluding.isEmpty
            ? .topic(message.topicKey) : .condition(condition(topic: message.topicKey, excluding: excluding))
        return components(message, options, target: target)
    }

    /// A topic message's components sent to one device's registration token instead of the topic, the same
    /// requests otherwise (the data keeps `topic_key`): a topic message held back for a device in its quiet hours.
    public static func requests(for message: RelayMessage, token: String,
                                options: FCMMappingOptions = FCMMappingOptions()) -> [FCMRequest] {
        components(message, options, target: .token(token))
    }

    /// Whom a request goes to: `message.topic`, `message.condition` or `message.token`.
    enum Target {
        case topic(String), condition(String), token(String)

        /// Sets the target's field of `wire`.
        func apply(to wire: inout Wire.Message) {
            switch self {
            case .topic(let topic): wire.topic = topic
            case .condition(let condition): wire.condition = condition
            case .token(let token): wire.token = token
            }
        }
    }

    /// An Alert's notification and data components, or an Information's data component, for `target`.
    private static func components(_ message: RelayMessage, _ options: FCMMappingOptions, target: Target)
        -> [FCMRequest] {
        switch message.distribution {
        case .alert:
            [notificationComponent(message, options, target: target), dataComponent(message, options, target: target)]
        case .information:
            [dataComponent(message, options, target: target)]
        }
    }

    /// The most topics a condition leaves out: FCM takes at most five topics in a condition, one is the message's.
    public static let maximumExcludedTopics = 4

    /// `'topic' in topics && !('a' in topics) && ...` for the first `maximumExcludedTopics` of `excluding`.
    public static func condition(topic: String, excluding: [String]) -> String {
        (["'\(topic)' in topics"] + excluding.prefix(maximumExcludedTopics).map { "!('\($0)' in topics)" })
            .joined(separator: " && ")
    }

    // MARK: Urgency

    /// The level APNs gets: `critical` only with the entitlement (`criticalAlerts`), else `time-sensitive`.
    static func apnsLevel(_ urgency: RelayMessage.Urgency, _ options: FCMMappingOptions) -> RelayMessage.Urgency {
        urgency == .critical && !options.criticalAlerts ? .timeSensitive : urgency
    }

    /// `aps.relevance-score` of each urgency: the notification summary puts the most urgent first.
    static func relevanceScore(_ urgency: RelayMessage.Urgency) -> Double {
        switch urgency {
        case .passive: 0.2
        case .active: 0.5
        case .timeSensitive: 0.8
        case .critical: 1.0
        }
    }

    /// The `aps` of a pop-up: its interruption level and relevance, and its sound (none for a passive one, the
    /// critical sound for a critical one APNs may play as such).
    static func alertAPS(_ message: RelayMessage, _ options: FCMMappingOptions) -> Wire.APS {
        let level = apnsLevel(message.urgency, options)
        let sound: Wire.Sound? = switch level {
        case .passive: nil
        case .active, .timeSensitive: "default"
        case .critical: .critical(name: "default", volume: 1.0)
        }
        return Wire.APS(sound: sound, contentAvailable: nil, interruptionLevel: level.rawValue,
                        relevanceScore: relevanceScore(message.urgency))
    }

    /// `android.priority`: `HIGH` (wakes the phone at once) for active and above, `NORMAL` for passive.
    static func androidPriority(_ message: RelayMessage) -> String {
        message.urgency.isImmediate ? "HIGH" : "NORMAL"
    }

    /// The `android` block of a pop-up: priority, ttl, and the notification on the urgency's channel.
    private static func alertAndroid(_ message: RelayMessage, _ options: FCMMappingOptions) -> Wire.Android {
        Wire.Android(priority: androidPriority(message), ttl: androidTTL(message),
                     notification: .init(sound: "default", channelID: options.androidChannels[message.urgency]))
    }

    /// The notification component: a pop-up with the message's key, so the app can open it.
    private static func notificationComponent(_ message: RelayMessage, _ options: FCMMappingOptions,
                                              target: Target) -> FCMRequest {
        var notification = Wire.Notification(title: message.title, body: message.desc)
        var data = ["msi_key": message.msiKey, "urgency": message.urgency.rawValue]
        // The flag alone: the pop-up's payload is the smallest, and the app reads the responses from the data
        // component or the hub.
        if message.ackResponses != nil { data["ack"] = "1" }
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
        var headers = ["apns-priority": message.urgency.isImmediate ? "10" : "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        var wire = Wire.Message(
            notification: notification,
            data: data,
            android: alertAndroid(message, options),
            apns: Wire.APNS(headers: headers, payload: .init(aps: alertAPS(message, options)))
        )
        target.apply(to: &wire)
        let size = payloadSize(data: data, notification: notification)
        return request(.notification, wire, options, size: size, truncated)
    }

    /// The data component: every field as a string, delivered silently (an APNs background push).
    private static func dataComponent(_ message: RelayMessage, _ options: FCMMappingOptions,
                                      target: Target) -> FCMRequest {
        var data = [
            "msi_key": message.msiKey,
            "topic_key": message.topicKey,
            "dist": message.distribution.rawValue,
            "title": message.title,
            "desc": message.desc,
            "message": message.message,
            "timestamp": String(message.timestamp),
            "urgency": message.urgency.rawValue,
        ]
        addAck(message, to: &data)
        var truncated = false
        if payloadSize(data: data, notification: nil) > options.payloadLimit {
            truncated = true
            // The full text stays at GET /message/:msiKey; the phone fetches it when it sees `truncated`.
            cutTexts(&data, notification: nil, limit: options.payloadLimit)
        }
        // APNs refuses a background push whose priority is not 5; FCM passes the refusal on.
        var headers = ["apns-push-type": "background", "apns-priority": "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        var wire = Wire.Message(
            notification: nil,
            data: data,
            android: Wire.Android(priority: androidPriority(message), ttl: androidTTL(message), notification: nil),
            apns: Wire.APNS(headers: headers, payload: .init(aps: .init(sound: nil, contentAvailable: 1)))
        )
        target.apply(to: &wire)
        return request(.data, wire, options, size: payloadSize(data: data, notification: nil), truncated)
    }

    /// The one request for a device of a message to persons and groups (`message.token`): an Alert's notification
    /// (title, desc) with the data, or an Information's data alone, delivered silently as the data component is.
    /// The data holds `msi_key`, `dist`, `title`, `desc`, `message`, `timestamp`, `audience` ("person" or "group"),
    /// `group` when reached through one, `ack` and `ack_responses` when it asks for an acknowledgement, and the
    /// message's own `data`. Over the payload limit, the data's message,
    /// desc and title are cut first, then the notification's body and title (`truncated: "true"`).
    public static func deviceRequest(for message: RelayMessage, token: String, audience: FCMAudience,
                                     options: FCMMappingOptions = FCMMappingOptions()) -> FCMRequest {
        // The sender's keys never collide with the hub's (the send rules reserve them); the hub's win regardless.
        var data = message.data
        data["msi_key"] = message.msiKey
        data["dist"] = message.distribution.rawValue
        data["title"] = message.title
        data["desc"] = message.desc
        data["message"] = message.message
        data["timestamp"] = String(message.timestamp)
        data["urgency"] = message.urgency.rawValue
        addAck(message, to: &data)
        switch audience {
        case .person:
            data["audience"] = "person"
            data["group"] = nil
        case .group(let id):
            data["audience"] = "group"
            data["group"] = id
        }
        let alert = message.distribution == .alert
        var notification = alert ? Wire.Notification(title: message.title, body: message.desc) : nil
        var truncated = false
        if payloadSize(data: data, notification: notification) > options.payloadLimit {
            truncated = true
            // The phone fetches the full text when it sees `truncated`; the pop-up's title is cut last.
            cutTexts(&data, notification: notification, limit: options.payloadLimit)
            if let shown = notification {
                let fits = { (candidate: Wire.Notification) in
                    payloadSize(data: data, notification: candidate) <= options.payloadLimit
                }
                let body = cut(shown.body) { fits(Wire.Notification(title: shown.title, body: $0)) }
                let title = cut(shown.title) { fits(Wire.Notification(title: $0, body: body)) }
                notification = Wire.Notification(title: title, body: body)
            }
        }
        // APNs refuses a background push whose priority is not 5, whatever the urgency.
        var headers = alert ? ["apns-priority": message.urgency.isImmediate ? "10" : "5"]
                            : ["apns-push-type": "background", "apns-priority": "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        let wire = Wire.Message(
            token: token,
            notification: notification,
            data: data,
            android: alert ? alertAndroid(message, options)
                           : Wire.Android(priority: androidPriority(message), ttl: androidTTL(message), notification: nil),
            apns: Wire.APNS(headers: headers, payload: .init(aps: alert ? alertAPS(message, options)
                                                                        : .init(sound: nil, contentAvailable: 1)))
        )
        return request(.device, wire, options, size: payloadSize(data: data, notification: notification), truncated)
    }

    private static func request(
        _ component: FCMComponent,
        _ message: Wire.Message,
        _ options: FCMMappingOptions,
        size: Int,
        _ truncated: Bool
    ) -> FCMRequest {
        let body = Wire.SendRequest(message: message, validateOnly: options.validateOnly ? true : nil)
        return FCMRequest(component: component, body: FCMJSON.bytes(body.json), payloadSize: size,
                          isTruncated: truncated)
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
        FCMJSON.bytes(FCMJSON.object(data)).count + (notification.map { FCMJSON.bytes($0.json).count } ?? 0)
    }

    /// Marks `data` `truncated` and cuts its texts (the message, then `desc`, then the title) until the payload, with
    /// `notification`, fits `limit`; if it still does not, leaves out `ack_responses` (the phone reads them from the
    /// hub, as it reads a truncated message; `ack` stays, so it knows to).
    private static func cutTexts(_ data: inout [String: String], notification: Wire.Notification?, limit: Int) {
        data["truncated"] = "true"
        for field in ["message", "desc", "title"] {
            data[field] = cut(data[field] ?? "") { candidate in
                var trial = data
                trial[field] = candidate
                return payloadSize(data: trial, notification: notification) <= limit
            }
        }
        if payloadSize(data: data, notification: notification) > limit { data["ack_responses"] = nil }
    }

    // MARK: Acknowledgement

    /// Adds `ack` ("1") and `ack_responses` (a JSON array of the responses, `[]` for a plain acknowledgement) when
    /// the message asks for an acknowledgement; leaves `data` as it is otherwise.
    static func addAck(_ message: RelayMessage, to data: inout [String: String]) {
        guard let responses = message.ackResponses else { return }
        data["ack"] = "1"
        data["ack_responses"] = jsonArray(responses)
    }

    /// `strings` as a compact JSON array (FCM's data values are strings: the phone parses this one).
    static func jsonArray(_ strings: [String]) -> String {
        var output: [UInt8] = [UInt8(ascii: "[")]
        for (index, string) in strings.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONString.append(string, to: &output)
        }
        output.append(UInt8(ascii: "]"))
        return String(decoding: output, as: UTF8.self)
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
}

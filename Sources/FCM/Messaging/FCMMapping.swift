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
            // The full text stays at GET /message/:msiKey; the phone fetches it when it sees `truncated`.
            cutTexts(&data, notification: nil, limit: options.payloadLimit)
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

    /// The one request for a device of a message to persons and groups (`message.token`): an Alert's notification
    /// (title, desc) with the data, or an Information's data alone, delivered silently as the data component is.
    /// The data holds `msi_key`, `dist`, `title`, `desc`, `message`, `timestamp`, `audience` ("person" or "group"),
    /// `group` when reached through one, and the message's own `data`. Over the payload limit, the data's message,
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
        var headers = alert ? ["apns-priority": "10"] : ["apns-push-type": "background", "apns-priority": "5"]
        headers.merge(expirationHeaders(message)) { $1 }
        let wire = Wire.Message(
            token: token,
            notification: notification,
            data: data,
            android: Wire.Android(priority: "HIGH", ttl: androidTTL(message),
                                  notification: alert ? .init(sound: "default") : nil),
            apns: Wire.APNS(headers: headers, payload: .init(aps: alert ? .init(sound: "default", contentAvailable: nil)
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
    /// `notification`, fits `limit`.
    private static func cutTexts(_ data: inout [String: String], notification: Wire.Notification?, limit: Int) {
        data["truncated"] = "true"
        for field in ["message", "desc", "title"] {
            data[field] = cut(data[field] ?? "") { candidate in
                var trial = data
                trial[field] = candidate
                return payloadSize(data: trial, notification: notification) <= limit
            }
        }
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

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
        /// The target: a topic (the spec's components) or one registration token (a message to persons and groups).
        var topic: String?
        var token: String?
        /// A topic condition (`'a' in topics && !('b' in topics)`): a topic message that leaves out quiet devices.
        var condition: String? = nil
        var notification: Notification?
        var data: [String: String]
        var android: Android
        var apns: APNS
    }

    struct Notification: Encodable {
        var title: String
        var body: String
        /// A poster's URL, shown with the notification (`notification.image`).
        var image: String? = nil
    }

    struct Android: Encodable {
        var priority: String
        var ttl: String?
        var notification: AndroidNotification?
    }

    struct AndroidNotification: Encodable {
        var sound: String
        /// The app's notification channel for the message's urgency.
        var channelID: String? = nil
        /// A poster's URL (`android.notification.image`).
        var image: String? = nil
        /// The notification's identity on the phone (`msi_key`): a later one with the same tag replaces it.
        var tag: String? = nil

        enum CodingKeys: String, CodingKey {
            case sound
            case channelID = "channel_id"
            case image, tag
        }
    }

    struct APNS: Encodable {
        var headers: [String: String]
        var payload: Payload
        /// FCM's options for APNs: a poster's URL, which FCM's notification service extension downloads.
        var fcmOptions: FCMOptions? = nil

        enum CodingKeys: String, CodingKey {
            case headers, payload
            case fcmOptions = "fcm_options"
        }
    }

    /// `apns.fcm_options`.
    struct FCMOptions: Encodable {
        var image: String
    }

    struct Payload: Encodable {
        var aps: APS
    }

    struct APS: Encodable {
        var sound: Sound?
        var contentAvailable: Int?
        /// `passive`, `active`, `time-sensitive` or `critical` (iOS 15 and later).
        var interruptionLevel: String? = nil
        /// Which notification of the app's the summary puts first, 0 to 1.
        var relevanceScore: Double? = nil
        /// 1: the app's notification service extension may change the notification (to attach a poster).
        var mutableContent: Int? = nil
        /// The notifications iOS groups together: a room's (`RelayMessage.room`).
        var threadID: String? = nil
        /// The app icon's count: the person's unread messages.
        var badge: Int? = nil
        /// The notification's actions: `MSI_ACK_<n>` for an acknowledgement of n responses (MSIKit registers them).
        var category: String? = nil

        enum CodingKeys: String, CodingKey {
            case sound
            case contentAvailable = "content-available"
            case interruptionLevel = "interruption-level"
            case relevanceScore = "relevance-score"
            case mutableContent = "mutable-content"
            case threadID = "thread-id"
            case category
            case badge
        }
    }

    /// `aps.sound`: a sound's name, or a critical alert's dictionary (which plays on a muted phone).
    enum Sound: Encodable, ExpressibleByStringLiteral {
        case named(String)
        case critical(name: String, volume: Double)

        init(stringLiteral value: String) { self = .named(value) }

        enum CodingKeys: String, CodingKey {
            case critical, name, volume
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .named(let name):
                var container = encoder.singleValueContainer()
                try container.encode(name)
            case .critical(let name, let volume):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(1, forKey: .critical)
                try container.encode(name, forKey: .name)
                try container.encode(volume, forKey: .volume)
            }
        }
    }
}

// MARK: JSON

/// A wire type as `FCMJSON` writes it; its `Encodable` form is what the test compares the writer against.
protocol FCMJSONRepresentable {
    var json: FCMJSON.Value { get }
}

extension Wire.SendRequest: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var members: [(key: String, value: FCMJSON.Value)] = [("message", message.json)]
        if let validateOnly { members.append(("validate_only", .bool(validateOnly))) }
        return .object(members)
    }
}

extension Wire.Message: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var members: [(key: String, value: FCMJSON.Value)] = [
            ("data", FCMJSON.object(data)), ("android", android.json), ("apns", apns.json),
        ]
        if let topic { members.append(("topic", .string(topic))) }
        if let token { members.append(("token", .string(token))) }
        if let condition { members.append(("condition", .string(condition))) }
        if let notification { members.append(("notification", notification.json)) }
        return .object(members)
    }
}

extension Wire.Notification: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var members: [(key: String, value: FCMJSON.Value)] = [("title", .string(title)), ("body", .string(body))]
        if let image { members.append(("image", .string(image))) }
        return .object(members)
    }
}

extension Wire.Android: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var members: [(key: String, value: FCMJSON.Value)] = [("priority", .string(priority))]
        if let ttl { members.append(("ttl", .string(ttl))) }
        if let notification {
            var fields: [(key: String, value: FCMJSON.Value)] = [("sound", .string(notification.sound))]
            if let channel = notification.channelID { fields.append(("channel_id", .string(channel))) }
            if let image = notification.image { fields.append(("image", .string(image))) }
            if let tag = notification.tag { fields.append(("tag", .string(tag))) }
            members.append(("notification", .object(fields)))
        }
        return .object(members)
    }
}

extension Wire.APNS: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var aps: [(key: String, value: FCMJSON.Value)] = []
        switch payload.aps.sound {
        case .named(let name)?: aps.append(("sound", .string(name)))
        case .critical(let name, let volume)?:
            aps.append(
                ("sound", .object([("critical", .int(1)), ("name", .string(name)), ("volume", .double(volume))])))
        case nil: break
        }
        if let available = payload.aps.contentAvailable { aps.append(("content-available", .int(available))) }
        if let level = payload.aps.interruptionLevel { aps.append(("interruption-level", .string(level))) }
        if let score = payload.aps.relevanceScore { aps.append(("relevance-score", .double(score))) }
        if let mutable = payload.aps.mutableContent { aps.append(("mutable-content", .int(mutable))) }
        if let thread = payload.aps.threadID { aps.append(("thread-id", .string(thread))) }
        if let category = payload.aps.category { aps.append(("category", .string(category))) }
        if let badge = payload.aps.badge { aps.append(("badge", .int(badge))) }
        var members: [(key: String, value: FCMJSON.Value)] = [
            ("headers", FCMJSON.object(headers)), ("payload", .object([("aps", .object(aps))])),
        ]
        if let fcmOptions { members.append(("fcm_options", .object([("image", .string(fcmOptions.image))]))) }
        return .object(members)
    }
}

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
        if let notification { members.append(("notification", notification.json)) }
        return .object(members)
    }
}

extension Wire.Notification: FCMJSONRepresentable {
    var json: FCMJSON.Value { .object([("title", .string(title)), ("body", .string(body))]) }
}

extension Wire.Android: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var members: [(key: String, value: FCMJSON.Value)] = [("priority", .string(priority))]
        if let ttl { members.append(("ttl", .string(ttl))) }
        if let notification { members.append(("notification", .object([("sound", .string(notification.sound))]))) }
        return .object(members)
    }
}

extension Wire.APNS: FCMJSONRepresentable {
    var json: FCMJSON.Value {
        var aps: [(key: String, value: FCMJSON.Value)] = []
        if let sound = payload.aps.sound { aps.append(("sound", .string(sound))) }
        if let available = payload.aps.contentAvailable { aps.append(("content-available", .int(available))) }
        return .object([("headers", FCMJSON.object(headers)), ("payload", .object([("aps", .object(aps))]))])
    }
}

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

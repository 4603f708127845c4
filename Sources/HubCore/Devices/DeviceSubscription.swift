import DAO
import Mongo

/// A subject a device receives, as "View My Subscriptions" shows it: where it sits in the cube, its level and
/// distribution, and whether FCM has applied the subscription yet.
public struct DeviceSubscription: Sendable {
    public var topicKey: String
    public var location: SubjectLocation
    /// Whether FCM has the subscription (false while the reconciler has yet to apply it).
    public var applied: Bool

    /// The legacy-style JSON document of the device API.
    public var document: BSONDocument {
        [
            "topic_key": .string(topicKey),
            "channel_id": .string(location.channel.id.hex), "channel_name": .string(location.channel.name),
            "area_id": .string(location.area.id.hex), "area_name": .string(location.area.name),
            "subject_id": .string(location.subject.id.hex), "subject_name": .string(location.subject.name),
            "level": .string(location.subject.level),
            "distribution": .string(location.subject.distribution?.rawValue ?? ""),
            "applied": .bool(applied),
        ]
    }
}

/// Who will receive a message to a topic: devices per platform, subscribed at FCM already or still pending.
public struct Audience: Sendable {
    public var topicKey: String
    public var byPlatform: [Platform: (applied: Int, pending: Int)]
    /// The devices whose persons hold the subject for a digest or turned it off: an Alert's notification leaves them
    /// out (they get its data in the background).
    public var held = 0

    /// Every device that will receive it.
    public var total: Int { byPlatform.values.reduce(0) { $0 + $1.applied + $1.pending } }

    public var document: BSONDocument {
        var platforms = BSONDocument()
        for platform in Platform.allCases {
            let counts = byPlatform[platform] ?? (0, 0)
            platforms[platform.rawValue] = [
                "applied": .int64(Int64(counts.applied)), "pending": .int64(Int64(counts.pending)),
            ]
        }
        return [
            "topic_key": .string(topicKey), "devices": .int64(Int64(total)),
            "instant": .int64(Int64(max(0, total - held))), "held": .int64(Int64(held)),
            "platforms": .document(platforms),
        ]
    }
}

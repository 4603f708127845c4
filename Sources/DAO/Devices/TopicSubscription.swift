import Mongo

/// One registration's subscription to one topic, as the hub wants it and as FCM has it: the reconciler's unit
/// of work (`pending` while the two differ).
public struct TopicSubscription: Sendable {
    public var id: ObjectID
    public var device: ObjectID
    /// The FCM registration the subscription is for (a credential: never listed).
    public var registration: String
    public var platform: Platform
    public var topic: String
    /// Whether the device should receive the topic.
    public var want: Bool
    /// Whether FCM has the subscription, as far as the hub knows.
    public var applied: Bool
    /// How many times applying it failed in a row.
    public var attempts: Int

    /// A subscription of `device` to `topic` that no document holds yet (a rollout's call), with the id its
    /// record will have.
    public init(rolling topic: String, to device: Device) {
        self.id = ObjectID()
        self.device = device.id
        self.registration = device.registration
        self.platform = device.platform
        self.topic = topic
        self.want = true
        self.applied = false
        self.attempts = 0
    }

    /// Reads a stored subscription; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id"), let device = document.objectID("device"),
            let registration = document["registration"]?.stringValue, let topic = document["topic"]?.stringValue
        else { return nil }
        self.id = id
        self.device = device
        self.registration = registration
        self.platform = Platform(rawValue: document.string("platform")) ?? .android
        self.topic = topic
        self.want = document["want"]?.boolValue ?? false
        self.applied = document["applied"]?.boolValue ?? false
        self.attempts = Int(document["attempts"]?.int64Value ?? 0)
    }
}

import Mongo

/// A topic message held back for one device in its quiet hours (`quiet_deferrals`): sent to the device's token
/// when its window ends. The registration token is kept to send with and is never listed (`description`).
public struct QuietDeferral: Sendable, CustomStringConvertible {
    /// Where the held-back send stands.
    public enum State: String, Sendable, CaseIterable {
        /// Waiting for `dueAt`, or FCM asked to try again later.
        case pending
        /// FCM took it.
        case sent
        /// FCM refused it for good.
        case failed
        /// FCM said the registration is gone.
        case unregistered
    }

    /// "<message _id hex>/<device id hex>": scheduling a message again inserts nothing twice.
    public var id: String
    /// The message's `_id`.
    public var message: ObjectID
    /// The message's `msi_key`, by which the sender reads it.
    public var msiKey: ObjectID
    public var device: ObjectID
    /// The registration token to send to.
    public var registration: String
    public var platform: Platform
    /// The quiet topic through which FCM left the device out.
    public var quietTopic: String
    /// When the device's quiet hours end (Unix ms): the send is due then.
    public var dueAt: Int64
    public var state: State

    /// A new pending deferral of `message` for `device` (its registration and platform), due at `dueAt`.
    public init(message: ObjectID, msiKey: ObjectID, device: ObjectID, registration: String, platform: Platform, quietTopic: String,
                dueAt: Int64) {
        self.id = "\(message.hex)/\(device.hex)"
        self.message = message
        self.msiKey = msiKey
        self.device = device
        self.registration = registration
        self.platform = platform
        self.quietTopic = quietTopic
        self.dueAt = dueAt
        self.state = .pending
    }

    /// Reads a stored deferral; nil when the document is not one.
    init?(document: BSONDocument) {
        guard let id = document["_id"]?.stringValue, let message = document.objectID("message"),
              let msiKey = document.objectID("msi_key"), let device = document.objectID("device"), let platform = Platform(rawValue: document.string("platform"))
        else { return nil }
        self.id = id
        self.message = message
        self.msiKey = msiKey
        self.device = device
        self.registration = document.string("registration")
        self.platform = platform
        self.quietTopic = document.string("quiet_topic")
        self.dueAt = document["due_at"]?.int64Value ?? 0
        self.state = State(rawValue: document.string("state")) ?? .pending
    }

    /// The document stored for a new deferral.
    var document: BSONDocument {
        ["_id": .string(id), "message": .objectID(message), "msi_key": .objectID(msiKey), "device": .objectID(device),
         "registration": .string(registration), "platform": .string(platform.rawValue),
         "quiet_topic": .string(quietTopic), "due_at": .int64(dueAt), "state": .string(state.rawValue)]
    }

    /// Names the deferral without its registration, a credential of the device.
    public var description: String { "QuietDeferral(\(id), \(state.rawValue), due \(dueAt))" }
}

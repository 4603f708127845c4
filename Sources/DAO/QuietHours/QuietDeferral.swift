import Mongo

/// A message held back for one device in its quiet hours (`quiet_deferrals`): sent to the device's token when its
/// window ends. A topic message's deferral names the quiet topic FCM left the device out through; a message to persons
/// and groups names the person (and group) of the device's delivery, which is `deferred` until the send is answered.
/// The registration token is kept to send with and is never listed (`description`).
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
    /// When the device's quiet hours end (Unix ms): the send is due then (moved on while a sender holds it).
    public var dueAt: Int64
    public var state: State
    /// The person of the device's delivery, for a message to persons and groups; nil for a topic message.
    public var person: String?
    /// The group the person was reached through, when the delivery's `via` is a group.
    public var group: String?
    /// How the device was reached when not through its person or a group (a sample of a topic: `cohort`).
    public var via: Delivery.Via?
    /// The device's locale when it was held back: the send goes in its language.
    public var locale: String?
    /// What this send tells the device instead of the message itself; nil: the message.
    public var notice: Notice?
    /// For a `.read` notice: the person's unread messages after the read.
    public var unread: Int?

    /// A notice a device gets about a message it has, sent through the same durable per-device queue.
    public enum Notice: String, Sendable {
        /// Its person acknowledged the message on another device: a background data message (`acknowledged: "1"`)
        /// on which the app removes the notification and marks the message acknowledged.
        case acknowledged
        /// Its person read the message on another device: a background data message (`read: "1"`, `unread`) on
        /// which the app marks it read, removes its notification and shows the new count.
        case read
    }

    /// A pending notice of `message` for `device` (its registration and platform), due at `dueAt`: its `_id` is
    /// "<message _id hex>/<device id hex>/<notice>", apart from a held-back send of the message itself.
    public static func notice(
        _ notice: Notice, message: ObjectID, msiKey: ObjectID, device: ObjectID,
        registration: String, platform: Platform, dueAt: Int64, unread: Int? = nil
    ) -> QuietDeferral {
        var deferral = QuietDeferral(
            message: message, msiKey: msiKey, device: device, registration: registration,
            platform: platform, quietTopic: "", dueAt: dueAt)
        deferral.notice = notice
        deferral.unread = unread
        deferral.id += "/\(notice.rawValue)"
        return deferral
    }

    /// A new pending deferral of `message` for `device` (its registration and platform), due at `dueAt`; `person`
    /// (and `group`) for a message to persons and groups.
    public init(
        message: ObjectID, msiKey: ObjectID, device: ObjectID, registration: String, platform: Platform,
        quietTopic: String, dueAt: Int64, person: String? = nil, group: String? = nil,
        via: Delivery.Via? = nil, locale: String? = nil
    ) {
        self.via = via
        self.locale = locale
        self.id = "\(message.hex)/\(device.hex)"
        self.message = message
        self.msiKey = msiKey
        self.device = device
        self.registration = registration
        self.platform = platform
        self.quietTopic = quietTopic
        self.dueAt = dueAt
        self.state = .pending
        self.person = person
        self.group = group
    }

    /// Reads a stored deferral; nil when the document is not one.
    init?(document: BSONDocument) {
        guard let id = document["_id"]?.stringValue, let message = document.objectID("message"),
            let msiKey = document.objectID("msi_key"), let device = document.objectID("device"),
            let platform = Platform(rawValue: document.string("platform"))
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
        self.person = document["person"]?.stringValue
        self.group = document["group"]?.stringValue
        self.via = document["via"]?.stringValue.flatMap(Delivery.Via.init(rawValue:))
        self.locale = document["locale"]?.stringValue
        self.notice = document["notice"]?.stringValue.flatMap(Notice.init(rawValue:))
        self.unread = document["unread"]?.int64Value.map { Int($0) }
    }

    /// The delivery this deferral holds back (a message to persons and groups), to record its answer on; nil for a
    /// topic message.
    public var delivery: Delivery? {
        person.map {
            Delivery(
                message: message, device: device, person: $0, group: group, platform: platform,
                registration: registration, via: via, locale: locale)
        }
    }

    /// The document stored for a new deferral.
    var document: BSONDocument {
        var document: BSONDocument = [
            "_id": .string(id), "message": .objectID(message), "msi_key": .objectID(msiKey),
            "device": .objectID(device),
            "registration": .string(registration), "platform": .string(platform.rawValue),
            "quiet_topic": .string(quietTopic), "due_at": .int64(dueAt), "state": .string(state.rawValue),
        ]
        if let person { document["person"] = .string(person) }
        if let group { document["group"] = .string(group) }
        if let via { document["via"] = .string(via.rawValue) }
        if let locale { document["locale"] = .string(locale) }
        if let notice { document["notice"] = .string(notice.rawValue) }
        if let unread { document["unread"] = .int64(Int64(unread)) }
        return document
    }

    /// Names the deferral without its registration, a credential of the device.
    public var description: String { "QuietDeferral(\(id), \(state.rawValue), due \(dueAt))" }
}

import Mongo

/// One device's share of a message to persons and groups, in `deliveries`: whom it reached, how, and what FCM said.
///
/// The registration token is what the relay sends to; it is never stored with the delivery nor listed
/// (`description` leaves it out).
public struct Delivery: Sendable, CustomStringConvertible {
    /// Where a device's send stands.
    public enum State: String, Sendable, CaseIterable {
        /// Not sent yet, or FCM asked to try again later.
        case pending
        /// FCM took it.
        case sent
        /// FCM refused it for good (`code` says why).
        case failed
        /// FCM said the registration is gone (`UNREGISTERED`); the device is marked unregistered too.
        case unregistered
        /// Held back: the device was in its quiet hours; its send waits in `quiet_deferrals` and the delivery becomes
        /// `sent` (or `failed`, `unregistered`) when the window has ended and FCM answered.
        case deferred
    }

    /// How the device was reached: its person was named, or is a member of a group named (`group`), or (a topic
    /// message that asked for an acknowledgement) it wants the topic.
    public enum Via: String, Sendable {
        case person, group, topic
        /// Picked for a sample of a topic's devices (`sample`, `cohort`).
        case cohort
    }

    /// "<message _id hex>/<device id hex>": resolving a message again inserts nothing twice.
    public var id: String
    /// The message's `_id`.
    public var message: ObjectID
    /// The device's id.
    public var device: ObjectID
    /// The person the device is bound to, through whom it was reached.
    public var person: String
    public var via: Via
    /// The group the person was reached through, when `via` is `.group`.
    public var group: String?
    /// The device's platform, for the report's counts.
    public var platform: Platform
    /// The registration token to send to, from the device as the relay resolved it (empty when read back).
    public var registration: String
    /// The device's locale as the relay resolved it, for the message's text in its language (never stored).
    public var locale: String?
    /// Whether its person muted the group it was reached through: the device gets the message in the background,
    /// never a sound (as the relay resolved it; never stored).
    public var muted = false
    /// Its person's unread messages once this one is counted, for the send's badge; nil: not counted (a sample's
    /// device, a re-send). Never stored.
    public var unread: Int?
    /// Its person's unread messages of the message's room, once this one is counted; nil for any other message.
    public var roomUnread: Int?
    /// Where the device's send stands.
    public var state: State
    /// FCM's error code, when it refused.
    public var code: String?
    /// When FCM answered (Unix ms).
    public var at: Int64?

    /// A delivery not answered yet of `message` to `device`, reached through `person` (and `group`, if any), or as
    /// `via` says.
    public init(
        message: ObjectID, device: ObjectID, person: String, group: String?, platform: Platform,
        registration: String, via: Via? = nil, locale: String? = nil
    ) {
        self.id = Self.id(message: message, device: device)
        self.message = message
        self.device = device
        self.person = person
        self.locale = locale
        self.via = via ?? (group == nil ? .person : .group)
        self.group = group
        self.platform = platform
        self.registration = registration
        self.state = .pending
    }

    /// Reads a stored delivery; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let id = document["_id"]?.stringValue, let message = document.objectID("message"),
            let device = document.objectID("device"),
            let platform = Platform(rawValue: document.string("platform"))
        else { return nil }
        self.id = id
        self.message = message
        self.device = device
        self.person = document.string("person")
        self.via = Via(rawValue: document.string("via")) ?? .person
        self.group = document["group"]?.stringValue
        self.platform = platform
        self.registration = ""
        self.state = State(rawValue: document.string("state")) ?? .pending
        self.code = document["code"]?.stringValue
        self.at = document["at"]?.int64Value
    }

    /// The `_id` of `message`'s delivery to `device`.
    public static func id(message: ObjectID, device: ObjectID) -> String {
        "\(message.hex)/\(device.hex)"
    }

    /// The document stored for the delivery once answered `state` (`code`) at `time`: never its registration.
    func document(state: State, code: String?, at time: Int64) -> BSONDocument {
        var elements: [(key: String, value: BSONValue)] = [
            ("_id", .string(id)), ("message", .objectID(message)), ("device", .objectID(device)),
            ("person", .string(person)), ("via", .string(via.rawValue)),
        ]
        if let group { elements.append(("group", .string(group))) }
        elements += [("platform", .string(platform.rawValue)), ("state", .string(state.rawValue))]
        if let code { elements.append(("code", .string(code))) }
        // Sent in the background for its person's choice (a mute, `digest` or `off`): counted apart in reports.
        if muted { elements.append(("held", true)) }
        if state != .pending { elements.append(("at", .int64(time))) }
        return BSONDocument(elements)
    }

    /// Names the delivery without its registration, a credential of the device.
    public var description: String { "Delivery(\(id), \(platform.rawValue), \(state.rawValue))" }
}

/// What FCM said to one device's send, as the relay records it in bulk (`DeliveryDAO.record`).
public struct DeliveryOutcome: Sendable {
    /// The delivery answered.
    public var delivery: Delivery
    /// `.sent`, `.failed`, `.unregistered`, `.pending` (FCM asked to try again later) or `.deferred` (quiet hours).
    public var state: Delivery.State
    /// FCM's error code for a refusal.
    public var code: String?

    public init(_ delivery: Delivery, state: Delivery.State, code: String? = nil) {
        self.delivery = delivery
        self.state = state
        self.code = code
    }

    /// The delivery's `_id`.
    public var id: String { delivery.id }

    /// The document stored for this answer at `time`.
    func document(at time: Int64) -> BSONDocument { delivery.document(state: state, code: code, at: time) }
}

/// A message's deliveries counted by state, overall and per platform.
public struct DeliveryCounts: Sendable, Equatable {
    /// How many deliveries stand at each state (every state present, 0 when none).
    public var byState: [Delivery.State: Int64]
    /// The same, per platform that has deliveries.
    public var byPlatform: [Platform: [Delivery.State: Int64]]
    /// The deliveries sent in the background for their person's choice (a mute, `digest` or `off`).
    public var held: Int64 = 0

    public init(byState: [Delivery.State: Int64] = [:], byPlatform: [Platform: [Delivery.State: Int64]] = [:]) {
        self.byState = byState
        self.byPlatform = byPlatform
    }

    /// Every delivery counted.
    public var total: Int64 { byState.values.reduce(0, +) }
}

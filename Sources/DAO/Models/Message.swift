import HubModel
import Mongo

/// A message as archived in `message`.
public struct Message: Sendable {
    /// The document's `_id`.
    public var id: ObjectID
    /// The message's identifier on phones.
    public var msiKey: ObjectID
    public var title: String
    public var desc: String
    public var message: String
    /// The subject's topic; "" for a message to persons and groups (`recipients`).
    public var topicKey: String
    /// The persons and groups a message not sent to a topic is addressed to (`to`); nil for a topic message.
    public var recipients: Recipients?
    /// String values the app receives with the message (a chat room, a deep link): FCM data beside the hub's own.
    public var data: [String: String]
    /// "Alert" or "Information" as stored.
    public var distribution: String
    /// How urgently it must reach phones (`urgency`); a message stored without one (legacy) is `active`.
    public var urgency: Urgency
    /// Its languages, poster, kind, expiry, display and sample (`Broadcast()` for a message without them).
    public var broadcast: Broadcast
    /// Stored as `override_preferences: true`: an admin's message, or a Forced subject's Alert, that goes past
    /// every preference of its recipients (`PreferencePolicy`).
    public var overridePreferences: Bool
    /// The user or token name that sent it (legacy: "Communicator" or "Super User"); "" for a member's post.
    public var sender: String
    /// The person who posted it from their device in a room (`sender: {"person": id}`); nil for staff's messages.
    public var senderPerson: String?
    /// The room (a group whose members post) it was posted in (`room`); nil for any other message.
    public var room: String?
    /// When the hub accepted it, in Unix milliseconds.
    public var timestamp: Int64
    /// The document as stored, unknown fields and msi-hub's `relay` included.
    public var document: BSONDocument

    /// Whether it ignores quiet hours, digests, `off` and mutes (`PreferencePolicy`).
    public var breaksThroughPreferences: Bool {
        PreferencePolicy.breaksThrough(urgency: urgency, overridePreferences: overridePreferences)
    }

    /// Reads a stored message; nil when `_id` or `msi_key` is not an ObjectId.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id"), let msiKey = document.objectID("msi_key") else { return nil }
        self.id = id
        self.msiKey = msiKey
        self.title = document.string("title")
        self.desc = document.string("desc")
        self.message = document.string("message")
        self.topicKey = document.string("topic_key")
        self.recipients = Recipients(document: document["to"]?.documentValue)
        self.data = Dictionary(
            (document["data"]?.documentValue ?? [:]).compactMap { key, value in value.stringValue.map { (key, $0) } },
            uniquingKeysWith: { first, _ in first })
        self.distribution = document.string("distribution")
        self.urgency = document["urgency"]?.stringValue.flatMap(Urgency.init(rawValue:)) ?? .default
        self.broadcast = Broadcast(message: document)
        self.overridePreferences = document["override_preferences"]?.boolValue == true
        self.sender = document.string("sender")
        self.senderPerson = document["sender"]?.documentValue?["person"]?.stringValue
        self.room = document["room"]?.stringValue
        self.timestamp = document["timestamp"]?.int64Value ?? 0
        self.document = document
    }
}

/// The fields of a new message; the DAO adds `_id`, `msi_key` and `timestamp`.
public struct MessageDraft: Sendable {
    public var title: String
    public var desc: String
    public var message: String
    /// The subject's topic; ignored (not stored) when `recipients` is set.
    public var topicKey: String
    /// The persons and groups to send to instead of a topic.
    public var recipients: Recipients?
    /// String values for the app, stored as `data` when not empty.
    public var data: [String: String]
    public var distribution: Distribution
    /// Stored as `urgency`.
    public var urgency: Urgency
    /// Stored as the fields the sender gave of `lang`, `translations`, `image`, `kind`, `dismissible`, `expires_at`,
    /// `display`, `sample` and `cohort`.
    public var broadcast: Broadcast
    /// The user or token name that sends it.
    public var sender: String
    /// The person who posts it in room `room` from their device: stored as `sender: {"person": id}` and `room`
    /// instead of `sender`'s name.
    public var roomPost: (person: String, room: String)?
    /// msi-hub's own fields to store beside the legacy ones (for instance `relay`).
    public var extra: BSONDocument

    public init(
        title: String, desc: String, message: String, topicKey: String, recipients: Recipients? = nil,
        data: [String: String] = [:], distribution: Distribution, urgency: Urgency = .default,
        broadcast: Broadcast = Broadcast(), sender: String, extra: BSONDocument = [:]
    ) {
        self.urgency = urgency
        self.broadcast = broadcast
        self.title = title
        self.desc = desc
        self.message = message
        self.topicKey = topicKey
        self.recipients = recipients
        self.data = data
        self.distribution = distribution
        self.sender = sender
        self.extra = extra
    }
}

/// Which messages a history page holds.
public struct MessageQuery: Sendable {
    /// Only these topics; empty means all.
    public var topicKeys: [String]
    /// Only messages at or after this Unix-ms time.
    public var since: Int64?
    /// At most this many.
    public var limit: Int
    /// Continue after this page position (from the previous page's `next`).
    public var after: MessageCursor?
    /// Only messages this user or token sent; nil means anyone's.
    public var sender: String?
    /// Only messages whose send time (`relay.send_at`) has come by this Unix-ms time; nil: scheduled ones too.
    public var sentBy: Int64?
    /// With `sentBy`: this sender's scheduled messages are in all the same.
    public var scheduledOf: String?
    /// Which messages to persons and groups (private: they have a `to`) the page may hold.
    public var addressed: AddressedMessages

    /// Which messages addressed to persons and groups a history page holds.
    public enum AddressedMessages: Sendable, Equatable {
        /// All of them (an admin's history).
        case all
        /// None (the public history).
        case none
        /// Those this user or token sent.
        case sentBy(String)
    }

    public init(
        topicKeys: [String] = [], since: Int64? = nil, limit: Int = 50, after: MessageCursor? = nil,
        sender: String? = nil, sentBy: Int64? = nil, scheduledOf: String? = nil,
        addressed: AddressedMessages = .all
    ) {
        self.addressed = addressed
        self.topicKeys = topicKeys
        self.since = since
        self.limit = limit
        self.after = after
        self.sender = sender
        self.sentBy = sentBy
        self.scheduledOf = scheduledOf
    }
}

/// Which messages a catch-up page holds: those of some topics from a time on, oldest first.
public struct CatchUpQuery: Sendable {
    /// The topics (a device's subscriptions).
    public var topicKeys: [String]
    /// The device's person, whose messages are in too; nil for a device bound to nobody.
    public var person: String?
    /// The groups of `person`, whose messages are in too.
    public var groups: [String]
    /// Only messages at or after this Unix-ms time.
    public var since: Int64
    /// At most this many.
    public var limit: Int
    /// Continue after this position of the oldest-first order (from the previous page's `next`).
    public var after: MessageCursor?
    /// The time (Unix ms) against which a message's expiry and due time are judged.
    public var now: Int64

    public init(
        topicKeys: [String], person: String? = nil, groups: [String] = [], since: Int64, limit: Int,
        after: MessageCursor? = nil, now: Int64
    ) {
        self.topicKeys = topicKeys
        self.person = person
        self.groups = person == nil ? [] : groups
        self.since = since
        self.limit = limit
        self.after = after
        self.now = now
    }
}

/// A position in the order of a page (timestamp, then `_id`: newest first for history, oldest first for a
/// catch-up), stable while new messages arrive.
public struct MessageCursor: Sendable, Equatable {
    public var timestamp: Int64
    public var id: ObjectID

    public init(timestamp: Int64, id: ObjectID) {
        self.timestamp = timestamp
        self.id = id
    }

    /// The opaque token clients pass back ("<timestamp>_<id hex>").
    public var token: String { "\(timestamp)_\(id.hex)" }

    /// The cursor a token spells, or nil for a malformed one.
    public init?(token: String) {
        let parts = token.split(separator: "_")
        guard parts.count == 2, let timestamp = Int64(parts[0]), let id = ObjectID(hex: parts[1]) else { return nil }
        self.init(timestamp: timestamp, id: id)
    }
}

/// One page of history, newest first, and where the next page starts (nil on the last page).
public struct MessagePage: Sendable {
    public var messages: [Message]
    public var next: MessageCursor?
}

import DAO
import Mongo

/// Who is looking at messages: what `MessageVisibility` decides on.
public enum MessageViewer: Sendable, Equatable {
    /// A caller without credentials (the public history).
    case anonymous
    /// A phone, through its catch-up.
    case device
    /// A user or an API token.
    case caller(Identity)
}

/// Who may see what of a message, the one rule every route and page that shows messages follows.
///
/// A message's sender and admins see all of it, scheduled or not, with its relay detail (leases, attempts, FCM's
/// answers). Everyone else (anonymous callers, devices, other communicators) sees a message only once its send time
/// has come, and then only its public fields (`publicFields`, its `ttl` and `send_at`, and its delivery state as
/// `relay.state`): never the relay's bookkeeping (lease owners, FCM message names and error texts), nor fields
/// unknown to the hub.
///
/// A message to persons and groups (it has a `to`) is private: its sender and admins see it; a device sees it
/// through its catch-up (which holds only the messages of its person and their groups) with its `data` but not whom
/// else it was for; nobody else sees it at all (not in the public history, 404 by its key). A topic message's `data`
/// is public like its topic (every subscribed phone gets it). A sample of a topic's devices (`sample`) is seen by its
/// sender and admins only: its devices got it by token, and nobody catches up with it. A message held for approval
/// (`ApprovalPolicy`), rejected or expired unapproved is seen by its sender and admins (with its `state`), and by
/// those who may approve it through `ApprovalService`; by nobody else (not in history, catch-up nor banners).
public enum MessageVisibility {
    /// The stored fields everyone may see, as stored.
    public static let publicFields = [
        "_id", "msi_key", "title", "desc", "message", "topic_key", "distribution",
        "urgency", "sender", "timestamp", "lang", "translations", "image", "kind",
        "dismissible", "expires_at", "display", "data", "room",
    ]

    /// Whether `viewer` sees all of `message`: its sender and admins.
    public static func seesDetail(of message: Message, _ viewer: MessageViewer) -> Bool {
        guard case .caller(let identity) = viewer else { return false }
        return identity.role == .admin || identity.name == message.sender
    }

    /// The messages whose detail `identity` sees, as a history filter: the sender's own (nil for an admin: all).
    public static func detailSender(for identity: Identity) -> String? {
        identity.role == .admin ? nil : identity.name
    }

    /// `message` as `viewer` sees it at `now` (Unix ms), or nil when it may not see it at all (scheduled, and not
    /// theirs).
    public static func view(_ message: Message, for viewer: MessageViewer, now: Int64) -> Message? {
        let approval = ApprovalState.of(message, now: now)
        if seesDetail(of: message, viewer) { return approval.map { withState(message, $0) } ?? message }
        if approval?.hidden == true { return nil }
        if message.audience == .persons, viewer != .device { return nil }
        // A sample's devices got it by token; to anyone else it is as private as a message to persons.
        if message.broadcast.sample != nil { return nil }
        if message.document["withdrawn"] != nil { return Message(document: tombstone(message)) }
        let relay = RelayState(message: message.document)
        if relay?.waitsForSendTime(at: now) == true { return nil }
        return Message(document: publicDocument(message, relay: relay))
    }

    /// `message` as the device of `person` (a member of `groups`) sees it in its catch-up: `view(_:for: .device)`,
    /// its acknowledgement request as the app shows it (`ack`: `responses`, `within_s`; not the escalation's
    /// progress), and for a message to persons and groups how it reached the device: `audience` "person" when it
    /// names the person, else "group" with the `group` (the first of the message's groups the person is in).
    public static func deviceView(_ message: Message, person: String?, groups: [String], now: Int64) -> Message? {
        guard let view = view(message, for: .device, now: now) else { return nil }
        var document = view.document
        if let ack = AckRequest(document: message.document["ack"]?.documentValue) {
            document["ack"] = [
                "responses": .array(ack.responses.map(BSONValue.string)), "within_s": .int64(ack.withinSeconds),
            ]
        }
        guard let recipients = message.recipients, let person else { return Message(document: document) ?? view }
        if recipients.persons.contains(person) {
            document["audience"] = "person"
        } else if let group = recipients.groups.first(where: groups.contains) {
            document["audience"] = "group"
            document["group"] = .string(group)
        }
        return Message(document: document) ?? view
    }

    /// `query` narrowed to what `viewer` may list at `now`: for all but admins, no message whose send time has not
    /// come, other than the viewer's own.
    public static func restrict(_ query: MessageQuery, for viewer: MessageViewer, now: Int64) -> MessageQuery {
        var query = query
        switch viewer {
        case .caller(let identity) where identity.role == .admin:
            query.addressed = .all
            return query
        case .caller(let identity):
            query.scheduledOf = identity.name
            query.addressed = .sentBy(identity.name)
        case .anonymous, .device:
            query.scheduledOf = nil
            query.addressed = .none
        }
        query.sentBy = now
        return query
    }

    /// The public fields of `message`: the legacy ones as stored, its `ttl` and `send_at` (top-level, as POST
    /// /message takes them) and its delivery state.
    static func publicDocument(_ message: Message, relay: RelayState?) -> BSONDocument {
        var document = BSONDocument(
            publicFields.compactMap { key in message.document[key].map { (key: key, value: $0) } })
        if let ttl = relay?.ttlSeconds { document["ttl"] = .int64(ttl) }
        if let sendAt = relay?.sendAt { document["send_at"] = .int64(sendAt) }
        if let relay { document["relay"] = ["state": .string(publicState(relay.status))] }
        return document
    }

    /// What is left of a withdrawn message for all but its sender and admins: its keys, audience, sender, time and
    /// `withdrawn` ({at, by, reason}); no texts, data nor presentation.
    static func tombstone(_ message: Message) -> BSONDocument {
        let kept = ["_id", "msi_key", "topic_key", "distribution", "sender", "timestamp", "withdrawn", "room"]
        return BSONDocument(kept.compactMap { key in message.document[key].map { (key: key, value: $0) } })
    }

    /// A relay state as the public sees it: whether the message went out, not how.
    static func publicState(_ status: RelayStatus) -> String {
        switch status {
        case .pending, .direct: "pending"
        case .sent, .imported: "sent"
        case .failed: "failed"
        case .expired: "expired"
        // Never shown to the public (`view`): held messages are their sender's, admins' and approvers'.
        case .awaitingApproval: "awaiting_approval"
        case .rejected: "rejected"
        // Shown as a tombstone (`tombstone`), never with its relay.
        case .withdrawn: "withdrawn"
        }
    }

    /// `message` with its approval `state` at the top (awaiting_approval, approved, rejected, expired).
    public static func withState(_ message: Message, _ state: ApprovalState) -> Message {
        var document = message.document
        document["state"] = .string(state.rawValue)
        return Message(document: document) ?? message
    }
}

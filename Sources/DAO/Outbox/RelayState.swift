import Mongo

/// Where a message stands in the relay to FCM (its `relay` sub-document, msi-hub's addition).
public enum RelayStatus: String, Sendable, CaseIterable {
    /// Waiting to be sent, or to be retried at `due_at`.
    case pending
    /// Being sent by the process that stored it (`relay.lease_owner`), which records nothing for it when every
    /// component reaches FCM: the message counts as sent once its owner's progress (`RelayProgressDAO`) passes
    /// its `relay.seq`. A failure, a retry or a hand-back is written to the message as for any other.
    case direct
    /// Every component reached FCM.
    case sent
    /// FCM refused a component for good, or the retry deadline passed.
    case failed
    /// The message's `ttl` ran out before it could be sent.
    case expired
    /// Imported from the legacy hub, which had sent it already: never sent again.
    case imported
}

/// One part of a message's relay: the spec's notification or data component of a topic message (one FCM request
/// each), or the per-device sends of a message to persons and groups (one request per device, each recorded in
/// `deliveries`).
public enum RelayComponent: String, Sendable, CaseIterable {
    case notification
    case data
    case devices

    /// The components a message sends: to persons and groups (`addressed`) its devices; to a topic, an Alert both
    /// components, an Information the data one alone.
    public static func components(for distribution: Distribution, addressed: Bool = false) -> [RelayComponent] {
        if addressed { return [.devices] }
        return distribution == .alert ? [.notification, .data] : [.data]
    }
}

/// A worker's hold on a message: while `until` (Unix ms) has not passed, no other worker sends it, and only
/// writes that name `owner` are recorded.
public struct RelayLease: Sendable, Hashable {
    /// The lease's name (`relay.lease_owner`), and when it runs out unless renewed (`relay.lease_until`, Unix ms).
    public var owner: String, until: Int64

    public init(owner: String, until: Int64) {
        (self.owner, self.until) = (owner, until)
    }
}

/// The hold of the process that stores a message and sends it itself: its relay worker's name and the
/// message's place in the order that worker reports its progress in (`RelayProgressDAO`).
public struct DirectRelay: Sendable, Hashable {
    /// The worker (`relay.lease_owner`), and the message's number among those it stored (`relay.seq`, from 1).
    public var owner: String, seq: Int64

    public init(owner: String, seq: Int64) {
        (self.owner, self.seq) = (owner, seq)
    }
}

/// The relay state a new message starts with.
public struct RelayPlan: Sendable {
    /// When to send, in Unix ms (now, or the client's `send_at`).
    public var dueAt: Int64
    /// The send time the client chose (Unix ms, `relay.send_at`), kept as given while `due_at` moves with
    /// retries: until it comes, the message is shown to its sender and admins only; nil: sent on arrival.
    public var sendAt: Int64?
    /// After this (Unix ms) nothing is sent any more: the message's `ttl` from its timestamp.
    public var expiresAt: Int64?
    /// The `ttl` in seconds, carried to FCM as `android.ttl` and `apns-expiration`.
    public var ttlSeconds: Int64?
    /// Retries stop and the message is marked failed after this (Unix ms).
    public var deadlineAt: Int64
    /// The process that stores the message and sends it itself, named in the same insert (no claim, and no
    /// write when it is sent); nil: any worker claims it when it is due.
    public var direct: DirectRelay?
    /// Whether the message goes to persons and groups (its devices one by one) rather than a topic.
    public var addressed: Bool

    public init(dueAt: Int64, sendAt: Int64? = nil, expiresAt: Int64? = nil, ttlSeconds: Int64? = nil,
                deadlineAt: Int64, direct: DirectRelay? = nil, addressed: Bool = false) {
        self.addressed = addressed
        self.dueAt = dueAt
        self.sendAt = sendAt
        self.expiresAt = expiresAt
        self.ttlSeconds = ttlSeconds
        self.deadlineAt = deadlineAt
        self.direct = direct
    }

    /// The `relay` sub-document for a message of `distribution`.
    public func document(for distribution: Distribution) -> BSONDocument {
        var components: [(key: String, value: BSONValue)] = []
        for component in RelayComponent.components(for: distribution, addressed: addressed) {
            components.append((component.rawValue, ["state": "pending", "attempts": 0]))
        }
        var relay: [(key: String, value: BSONValue)] = [
            ("state", direct == nil ? "pending" : "direct"),
            ("due_at", .int64(dueAt)), ("deadline_at", .int64(deadlineAt)),
            // A message its storing process sends is on its first attempt, as a claim would count it.
            ("attempts", .int32(direct == nil ? 0 : 1)), ("components", .document(BSONDocument(components))),
        ]
        if let direct {
            relay += [("lease_owner", .string(direct.owner)), ("seq", .int64(direct.seq))]
        }
        if let sendAt { relay.append(("send_at", .int64(sendAt))) }
        if let expiresAt { relay.append(("expires_at", .int64(expiresAt))) }
        if let ttlSeconds { relay.append(("ttl", .int64(ttlSeconds))) }
        return BSONDocument(relay)
    }
}

/// A message's relay state as stored.
public struct RelayState: Sendable {
    public var status: RelayStatus
    public var dueAt: Int64
    /// The send time the client chose, if it chose one (`RelayPlan.sendAt`).
    public var sendAt: Int64?
    public var deadlineAt: Int64
    public var expiresAt: Int64?
    public var ttlSeconds: Int64?
    /// Claims so far.
    public var attempts: Int64
    /// The lease that holds the message now, if any (it may have run out).
    public var lease: RelayLease?
    /// The process that stored the message and sends it, while the state is `.direct`.
    public var direct: DirectRelay?
    /// Each component's state, FCM message name, attempts and last error.
    public var components: [RelayComponent: ComponentState]

    /// One component's outcome.
    public struct ComponentState: Sendable, Equatable {
        public var sent: Bool
        public var failed: Bool
        /// FCM's name for the sent message (`projects/.../messages/...`).
        public var name: String?
        public var attempts: Int64
        public var lastError: String?
    }

    /// Reads the `relay` sub-document; nil when the message has none (written by the legacy hub).
    public init?(message: BSONDocument) {
        guard let relay = message["relay"]?.documentValue,
              let status = RelayStatus(rawValue: relay.string("state")) else { return nil }
        self.status = status
        self.dueAt = relay["due_at"]?.int64Value ?? 0
        self.sendAt = relay["send_at"]?.int64Value
        self.deadlineAt = relay["deadline_at"]?.int64Value ?? .max
        self.expiresAt = relay["expires_at"]?.int64Value
        self.ttlSeconds = relay["ttl"]?.int64Value
        self.attempts = relay["attempts"]?.int64Value ?? 0
        if let owner = relay["lease_owner"]?.stringValue, let until = relay["lease_until"]?.int64Value {
            self.lease = RelayLease(owner: owner, until: until)
        }
        if status == .direct, let owner = relay["lease_owner"]?.stringValue, let seq = relay["seq"]?.int64Value {
            self.direct = DirectRelay(owner: owner, seq: seq)
        }
        var components: [RelayComponent: ComponentState] = [:]
        for (key, value) in relay["components"]?.documentValue ?? [:] {
            guard let component = RelayComponent(rawValue: key), let state = value.documentValue else { continue }
            components[component] = ComponentState(
                sent: state.string("state") == "sent", failed: state.string("state") == "failed",
                name: state["name"]?.stringValue, attempts: state["attempts"]?.int64Value ?? 0,
                lastError: state["last_error"]?.stringValue)
        }
        self.components = components
    }

    /// Whether the message still waits for its send time at `now` (Unix ms): its `send_at` is later; or, stored
    /// before `send_at` was recorded, it was never claimed and is due later (a retry moves `due_at` only after a
    /// claim).
    public func waitsForSendTime(at now: Int64) -> Bool {
        if let sendAt { return sendAt > now }
        return status == .pending && attempts == 0 && dueAt > now
    }

    /// The components still to send, in the order the spec lists them.
    public var unsent: [RelayComponent] {
        RelayComponent.allCases.filter { components[$0].map { !$0.sent && !$0.failed } ?? false }
    }
}

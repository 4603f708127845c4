import Mongo

/// Where a message stands in the relay to FCM (its `relay` sub-document, msi-hub's addition).
public enum RelayStatus: String, Sendable, CaseIterable {
    /// Waiting to be sent, or to be retried at `due_at`.
    case pending
    /// Every component reached FCM.
    case sent
    /// FCM refused a component for good, or the retry deadline passed.
    case failed
    /// The message's `ttl` ran out before it could be sent.
    case expired
    /// Imported from the legacy hub, which had sent it already: never sent again.
    case imported
}

/// One FCM request of a message: the spec's notification or data component.
public enum RelayComponent: String, Sendable, CaseIterable {
    case notification
    case data

    /// The components a distribution sends: an Alert both, an Information the data one alone.
    public static func components(for distribution: Distribution) -> [RelayComponent] {
        distribution == .alert ? [.notification, .data] : [.data]
    }
}

/// The relay state a new message starts with.
public struct RelayPlan: Sendable {
    /// When to send, in Unix ms (now, or the client's `send_at`).
    public var dueAt: Int64
    /// After this (Unix ms) nothing is sent any more: the message's `ttl` from its timestamp.
    public var expiresAt: Int64?
    /// The `ttl` in seconds, carried to FCM as `android.ttl` and `apns-expiration`.
    public var ttlSeconds: Int64?
    /// Retries stop and the message is marked failed after this (Unix ms).
    public var deadlineAt: Int64

    public init(dueAt: Int64, expiresAt: Int64? = nil, ttlSeconds: Int64? = nil, deadlineAt: Int64) {
        self.dueAt = dueAt
        self.expiresAt = expiresAt
        self.ttlSeconds = ttlSeconds
        self.deadlineAt = deadlineAt
    }

    /// The `relay` sub-document for a message of `distribution`.
    public func document(for distribution: Distribution) -> BSONDocument {
        var components: [(key: String, value: BSONValue)] = []
        for component in RelayComponent.components(for: distribution) {
            components.append((component.rawValue, ["state": "pending", "attempts": 0]))
        }
        var relay: [(key: String, value: BSONValue)] = [
            ("state", "pending"), ("due_at", .int64(dueAt)), ("deadline_at", .int64(deadlineAt)),
            ("attempts", 0), ("components", .document(BSONDocument(components))),
        ]
        if let expiresAt { relay.append(("expires_at", .int64(expiresAt))) }
        if let ttlSeconds { relay.append(("ttl", .int64(ttlSeconds))) }
        return BSONDocument(relay)
    }
}

/// A message's relay state as stored.
public struct RelayState: Sendable {
    public var status: RelayStatus
    public var dueAt: Int64
    public var deadlineAt: Int64
    public var expiresAt: Int64?
    public var ttlSeconds: Int64?
    /// Claims so far.
    public var attempts: Int64
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
        self.deadlineAt = relay["deadline_at"]?.int64Value ?? .max
        self.expiresAt = relay["expires_at"]?.int64Value
        self.ttlSeconds = relay["ttl"]?.int64Value
        self.attempts = relay["attempts"]?.int64Value ?? 0
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

    /// The components still to send, in the order the spec lists them.
    public var unsent: [RelayComponent] {
        RelayComponent.allCases.filter { components[$0].map { !$0.sent && !$0.failed } ?? false }
    }
}

import HubModel
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
    /// Held until a second person approves it (`ApprovalPolicy`): no worker claims it, nobody but its sender,
    /// admins and its possible approvers sees it; approving it makes it `pending`.
    case awaitingApproval = "awaiting_approval"
    /// Its approval was refused (`approval.by`, `approval.reason`): never sent.
    case rejected
    /// Withdrawn by its sender or an admin before it was sent (`withdrawn`): never claimed, never sent
    /// (`MessageDAO.withdraw`).
    case withdrawn
}

/// One part of a message's relay, recorded at `relay.components.<name>`: the spec's notification or data component
/// of a topic message (one FCM request each), a translated Alert's request for one language (`lang-<code>`) or for
/// the rest (`lang-default`), or the per-device sends of a message to persons and groups (one request per device,
/// each recorded in `deliveries`).
public struct RelayComponent: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The name: a field name, so never empty, never with a "." nor a leading "$".
    public let rawValue: String

    /// The component named `rawValue`; nil for a name that cannot be a field of `relay.components`.
    public init?(rawValue: String) {
        guard !rawValue.isEmpty, !rawValue.contains("."), !rawValue.hasPrefix("$") else { return nil }
        self.rawValue = rawValue
    }

    private init(known: String) {
        self.rawValue = known
    }

    /// A topic Alert's pop-up.
    public static let notification = RelayComponent(known: "notification")
    /// A topic message's data.
    public static let data = RelayComponent(known: "data")
    /// The per-device sends of a message to persons and groups.
    public static let devices = RelayComponent(known: "devices")
    /// A translated Alert's request in its main language, to the devices of no language sent separately.
    public static let defaultLanguage = RelayComponent(known: "lang-default")

    /// A translated Alert's request to the devices of language `code` (a primary subtag: no ".").
    public static func language(_ code: String) -> RelayComponent {
        RelayComponent(known: languagePrefix + code)
    }

    /// What a language component's name starts with (the hub's language topics' prefix too).
    public static let languagePrefix = LocaleLanguage.topicPrefix

    /// A correction's request to the phones that have the message (`correction-<n>`, the n-th correction).
    public static func correction(_ number: Int) -> RelayComponent {
        RelayComponent(known: "correction-\(number)")
    }

    /// A withdrawal's request to the phones that have the message.
    public static let withdrawal = RelayComponent(known: "withdrawal")

    /// Whether it tells the phones about a message they have (a correction or the withdrawal), not the message.
    public var isNotice: Bool { self == .withdrawal || rawValue.hasPrefix("correction-") }

    /// The language of a `lang-<code>` component; nil for any other (`lang-default` included).
    public var language: String? {
        guard rawValue.hasPrefix(Self.languagePrefix), self != .defaultLanguage else { return nil }
        return String(rawValue.dropFirst(Self.languagePrefix.count))
    }

    /// Whether it is a translated Alert's request (`lang-<code>` or `lang-default`).
    public var isLanguage: Bool { rawValue.hasPrefix(Self.languagePrefix) }

    /// The name.
    public var description: String { rawValue }

    /// The most languages a topic Alert sends in requests of their own: FCM takes five topics in a condition, one
    /// of them the subject's (the FCM mapping spends the same budget, the quiet exclusions first).
    public static let maximumSeparateLanguages = 4

    /// The components a message sends: to persons and groups (`addressed`) its devices; to a topic, a message not
    /// shown (`display` false) and an Information the data component alone, an Alert with translations one component
    /// per language that may go separately (the first `maximumSeparateLanguages` of `languages`, in order) and
    /// `lang-default`, any other Alert the notification and data components.
    public static func components(
        for distribution: Distribution, addressed: Bool = false, languages: [String] = [],
        display: Bool = true
    ) -> [RelayComponent] {
        if addressed { return [.devices] }
        guard distribution == .alert, display else { return [.data] }
        if languages.isEmpty { return [.notification, .data] }
        var codes: [String] = []
        for code in languages where !codes.contains(code) && codes.count < maximumSeparateLanguages {
            codes.append(code)
        }
        return codes.map(language) + [.defaultLanguage]
    }

    /// The order writes name components in: notification, data, devices, the languages, `lang-default`, others.
    public static func < (lhs: RelayComponent, rhs: RelayComponent) -> Bool {
        (lhs.rank, lhs.rawValue) < (rhs.rank, rhs.rawValue)
    }

    private var rank: Int {
        switch self {
        case .notification: 0
        case .data: 1
        case .devices: 2
        case .defaultLanguage: 4
        default: language == nil ? 5 : 3
        }
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
    /// The languages of the message's translations, in order: a topic Alert's languages that may be sent in
    /// requests of their own (`RelayComponent.components`).
    public var languages: [String]
    /// Whether the message is shown (`display`); false: its data component alone.
    public var display: Bool
    /// Whether it waits for a second person's approval (`RelayStatus.awaitingApproval`) rather than for the relay.
    public var awaitsApproval: Bool

    public init(
        dueAt: Int64, sendAt: Int64? = nil, expiresAt: Int64? = nil, ttlSeconds: Int64? = nil,
        deadlineAt: Int64, direct: DirectRelay? = nil, addressed: Bool = false, languages: [String] = [],
        display: Bool = true, awaitsApproval: Bool = false
    ) {
        self.awaitsApproval = awaitsApproval
        self.addressed = addressed
        self.languages = languages
        self.display = display
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
        for component in RelayComponent.components(
            for: distribution, addressed: addressed, languages: languages,
            display: display)
        {
            var state: BSONDocument = ["state": "pending", "attempts": 0]
            // Sent from its insert on by the process that stores it: any later attempt (a takeover) looks for the
            // answers of this one before it sends (`DeliveryDAO.markResolving` for a claimed message).
            if component == .devices, direct != nil { state["resolving"] = true }
            components.append((component.rawValue, .document(state)))
        }
        var relay: [(key: String, value: BSONValue)] = [
            (
                "state",
                .string(awaitsApproval ? RelayStatus.awaitingApproval.rawValue : direct == nil ? "pending" : "direct")
            ),
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
    /// The components in the order they are stored (the order the plan lists them in).
    public var order: [RelayComponent]
    /// How many corrections and withdrawals were stored while the message was being sent (`relay.edit`): a worker
    /// holding it compares this with what it read (`MessageDAO.correct`, `withdraw`).
    public var edit: Int64
    /// A direct message that an edit handed to the outbox while its process was sending it (`relay.seq` kept on a
    /// pending message): claimed by another worker, its components went out whatever their records say.
    public var handedOverByEdit: Bool

    /// One component's outcome.
    public struct ComponentState: Sendable, Equatable {
        public var sent: Bool
        public var failed: Bool
        /// Never to be sent: the message was withdrawn before it went, or a notice found nobody it had reached.
        public var skipped: Bool = false
        /// FCM's name for the sent message (`projects/.../messages/...`).
        public var name: String?
        public var attempts: Int64
        public var lastError: String?
    }

    /// Reads the `relay` sub-document; nil when the message has none (written by the legacy hub).
    public init?(message: BSONDocument) {
        guard let relay = message["relay"]?.documentValue,
            let status = RelayStatus(rawValue: relay.string("state"))
        else { return nil }
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
        var order: [RelayComponent] = []
        for (key, value) in relay["components"]?.documentValue ?? [:] {
            guard let component = RelayComponent(rawValue: key), let state = value.documentValue else { continue }
            if components[component] == nil { order.append(component) }
            components[component] = ComponentState(
                sent: state.string("state") == "sent", failed: state.string("state") == "failed",
                skipped: state.string("state") == RelayOutcome.skippedState,
                name: state["name"]?.stringValue, attempts: state["attempts"]?.int64Value ?? 0,
                lastError: state["last_error"]?.stringValue)
        }
        self.components = components
        self.order = order
        self.edit = relay["edit"]?.int64Value ?? 0
        self.handedOverByEdit = status == .pending && relay["seq"] != nil
    }

    /// Whether the message still waits for its send time at `now` (Unix ms): its `send_at` is later; or, stored
    /// before `send_at` was recorded, it was never claimed and is due later (a retry moves `due_at` only after a
    /// claim).
    public func waitsForSendTime(at now: Int64) -> Bool {
        if let sendAt { return sendAt > now }
        return status == .pending && attempts == 0 && dueAt > now
    }

    /// The components still to send, in the order they are stored.
    public var unsent: [RelayComponent] {
        order.filter { !isDone($0) }
    }

    /// Whether FCM took `component` or refused it for good; false for one not on record (it is still to send).
    public func isDone(_ component: RelayComponent) -> Bool {
        components[component].map { $0.sent || $0.failed || $0.skipped } ?? false
    }

    /// The languages of a translated Alert that went (or were answered) in requests of their own, in order: their
    /// devices have the message in that language, so a retry or a correction reaches them the same way.
    public var languagesSentSeparately: [String] {
        order.compactMap { isDone($0) ? $0.language : nil }
    }
}

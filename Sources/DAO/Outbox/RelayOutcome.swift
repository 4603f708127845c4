import Mongo

/// What one claim's attempt at a message came to: each component tried, and where the message goes next.
public struct RelayOutcome: Sendable {
    /// What happened to one component.
    public enum ComponentResult: Sendable, Equatable {
        /// FCM accepted it under this name (`projects/.../messages/...`).
        case sent(name: String)
        /// FCM refused it; `permanent` when retrying cannot help (400, 403, 404).
        case failed(error: String, permanent: Bool)
        /// Never to be sent (`RelayOutcome.skippedState`): the message was withdrawn before this component went, or
        /// a notice found nobody the message had reached.
        case skipped
    }

    /// The state of a component never to be sent.
    public static let skippedState = "skipped"

    /// The message's `_id`.
    public var id: ObjectID
    /// Where the message stands now: `.sent`, `.failed`, `.expired`, or `.pending` to be retried at `retryAt`.
    public var status: RelayStatus
    /// When a pending message is due again (Unix ms).
    public var retryAt: Int64?
    /// The components tried in this attempt; those not named were not tried.
    public var components: [RelayComponent: ComponentResult]
    /// Why the message is not sent yet, or failed, for the operator.
    public var lastError: String?
    /// The message's `relay.edit` as the attempt last read it: when a correction or withdrawal stored since moved it
    /// on, the outcome leaves the message pending and due at once instead, for its notice (nil: not checked).
    public var edit: Int64?

    public init(
        id: ObjectID, status: RelayStatus, retryAt: Int64? = nil,
        components: [RelayComponent: ComponentResult] = [:], lastError: String? = nil, edit: Int64? = nil
    ) {
        self.edit = edit
        self.id = id
        self.status = status
        self.retryAt = retryAt
        self.components = components
        self.lastError = lastError
    }

    /// The write that records this outcome and ends the lease `lease`; `now` stamps it.
    public func update(lease: String, now: Int64) -> RelayUpdate {
        var update = RelayUpdate(id: id, lease: lease)
        update.set.append(("relay.state", .string(status.rawValue)))
        update.set.append(("relay.updated_at", .int64(now)))
        if let retryAt { update.set.append(("relay.due_at", .int64(retryAt))) }
        if let lastError { update.set.append(("relay.last_error", .string(lastError))) }
        for component in components.keys.sorted() {
            guard let result = components[component] else { continue }
            update.merge(RelayUpdate(id: id, lease: lease, component: component, result: result, at: now))
        }
        update.endsLease = true
        if let edit { update.edit = RelayUpdate.EditGuard(seen: edit, at: now) }
        return update
    }
}

/// One message's writes waiting to be recorded under its lease: what components FCM took or refused, and
/// at the end the message's outcome. Writes of one message made close together merge into one statement,
/// so a message costs one update however many components it has.
public struct RelayUpdate: Sendable {
    /// The message's `_id`.
    public let id: ObjectID
    /// The lease the write is recorded under: nothing is written once another lease holds the message.
    public let lease: String
    var set: [(key: String, value: BSONValue)] = []
    var increments: [(key: String, value: BSONValue)] = []
    /// Whether the write ends the lease (the message's outcome, not just a component's).
    public internal(set) var endsLease = false
    /// An outcome that holds only while `relay.edit` is what the attempt read (`RelayOutcome.edit`).
    var edit: EditGuard?

    /// The `relay.edit` an outcome was decided on, and when it is written (Unix ms): where the stored count moved
    /// on, the write leaves the message pending, due at `at`, so that a worker sends the notice the edit added.
    struct EditGuard: Sendable, Equatable {
        var seen: Int64, at: Int64
    }

    init(id: ObjectID, lease: String) {
        self.id = id
        self.lease = lease
    }

    /// What happened to one component, recorded as it happens (at `at`, Unix ms), before the message's outcome.
    public init(id: ObjectID, lease: String, component: RelayComponent, result: RelayOutcome.ComponentResult, at: Int64)
    {
        self.init(id: id, lease: lease)
        let path = "relay.components.\(component.rawValue)"
        increments.append(("\(path).attempts", 1))
        switch result {
        case .sent(let name):
            set += [("\(path).state", "sent"), ("\(path).name", .string(name)), ("\(path).sent_at", .int64(at))]
        case .failed(let error, let permanent):
            set += [("\(path).last_error", .string(error)), ("\(path).failed_at", .int64(at))]
            if permanent { set.append(("\(path).state", "failed")) }
        case .skipped:
            set.append(("\(path).state", .string(RelayOutcome.skippedState)))
        }
    }

    /// Ends the lease on a message without recording anything, so that any worker may claim it at once (a
    /// worker that stops before sending it); a `.direct` message becomes pending.
    public static func release(id: ObjectID, lease: String) -> RelayUpdate {
        var update = RelayUpdate(id: id, lease: lease)
        update.set.append(("relay.state", "pending"))
        update.endsLease = true
        return update
    }

    /// Adds a later write of the same message (its fields win; increments add up).
    public mutating func merge(_ later: RelayUpdate) {
        precondition(later.id == id, "only writes of one message merge")
        for (key, value) in later.set {
            if let index = set.firstIndex(where: { $0.key == key }) {
                set[index].value = value
            } else {
                set.append((key, value))
            }
        }
        for (key, value) in later.increments {
            if let index = increments.firstIndex(where: { $0.key == key }),
                let sum = (increments[index].value.int64Value).map({ $0 + (value.int64Value ?? 0) })
            {
                increments[index].value = Int32(exactly: sum).map(BSONValue.int32) ?? .int64(sum)
            } else {
                increments.append((key, value))
            }
        }
        endsLease = endsLease || later.endsLease
        if let guarded = later.edit { edit = guarded }
    }

    /// What writes of the same shape share: the lease they are recorded under, the fields they set and
    /// increment, and whether they end the lease. Writes of one shape go into one statement (`statements`).
    struct Shape: Hashable {
        var lease: String
        var set: [String]
        var increments: [String]
        var endsLease: Bool
        var guarded: Bool
    }

    var shape: Shape {
        Shape(
            lease: lease, set: set.map(\.key), increments: increments.map(\.key), endsLease: endsLease,
            guarded: edit != nil)
    }

    /// How many messages one statement names: an update pipeline picks each message's own values by `_id`, so a
    /// statement's cost grows with the product of the two; 16 keeps it about half that of one statement a message.
    static let messagesPerStatement = 16

    /// `updates` as update statements, each for up to `messagesPerStatement` messages of one shape, still held
    /// by the statement's lease. A value every message of the statement shares is written as it is; one that
    /// differs (FCM's name for each message) is chosen by `_id` (`$switch`). The update is a pipeline (MongoDB
    /// 4.2 and later), so every value is a `$literal`: a string starting with `$` is never read as a field.
    public static func statements(_ updates: [RelayUpdate]) -> [UpdateStatement] {
        var shapes: [Shape: [RelayUpdate]] = [:]
        var order: [Shape] = []
        for update in updates {
            let shape = update.shape
            if shapes[shape] == nil { order.append(shape) }
            shapes[shape, default: []].append(update)
        }
        return order.flatMap { shape in
            let group = shapes[shape] ?? []
            return stride(from: 0, to: group.count, by: messagesPerStatement).map { start in
                statement(Array(group[start..<min(start + messagesPerStatement, group.count)]), shape: shape)
            }
        }
    }

    private static func statement(_ updates: [RelayUpdate], shape: Shape) -> UpdateStatement {
        func value(_ pick: (RelayUpdate) -> BSONValue) -> BSONValue {
            let values = updates.map(pick)
            if values.dropFirst().allSatisfy({ $0 == values[0] }) { return ["$literal": values[0]] }
            let branches = zip(updates, values).map { update, value -> BSONValue in
                ["case": ["$eq": .array(["$_id", .objectID(update.id)])], "then": ["$literal": value]]
            }
            return ["$switch": ["branches": .array(branches), "default": .null]]
        }
        var fields: [(key: String, value: BSONValue)] = []
        for (index, key) in shape.set.enumerated() {
            fields.append((key, value { $0.set[index].value }))
        }
        if shape.guarded {
            // Edited since the attempt read it: pending, due now, whatever the attempt came to (`EditGuard`).
            let unedited: BSONValue = [
                "$eq": .array([
                    ["$ifNull": .array(["$relay.edit", .int64(0)])],
                    value { .int64($0.edit?.seen ?? 0) },
                ])
            ]
            func guarded(_ kept: BSONValue, otherwise: BSONValue) -> BSONValue {
                ["$switch": ["branches": [["case": unedited, "then": kept]], "default": otherwise]]
            }
            let now = value { .int64($0.edit?.at ?? 0) }
            for index in fields.indices where fields[index].key == "relay.state" {
                fields[index].value = guarded(fields[index].value, otherwise: ["$literal": "pending"])
            }
            if let index = fields.firstIndex(where: { $0.key == "relay.due_at" }) {
                fields[index].value = guarded(fields[index].value, otherwise: now)
            } else {
                fields.append(("relay.due_at", guarded("$relay.due_at", otherwise: now)))
            }
        }
        for (index, key) in shape.increments.enumerated() {
            fields.append(
                (
                    key,
                    [
                        "$add": .array([
                            ["$ifNull": .array([.string("$" + key), 0])], value { $0.increments[index].value },
                        ])
                    ]
                ))
        }
        var stages: [BSONValue] = []
        if !fields.isEmpty { stages.append(["$set": .document(BSONDocument(fields))]) }
        if shape.endsLease {
            stages.append(["$unset": .array(["relay.lease_owner", "relay.lease_until", "relay.seq"])])
        }
        // A pipeline is an array; the C driver takes it as a document keyed "0", "1", ...
        let pipeline = BSONDocument(stages.enumerated().map { (key: String($0.offset), value: $0.element) })
        return UpdateStatement(
            filter: ["_id": IDChunks.membership(updates.map(\.id)), "relay.lease_owner": .string(shape.lease)],
            update: pipeline, many: true)
    }
}

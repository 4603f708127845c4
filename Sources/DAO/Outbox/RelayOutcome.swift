import Mongo

/// What one claim's attempt at a message came to: each component tried, and where the message goes next.
public struct RelayOutcome: Sendable {
    /// What happened to one component.
    public enum ComponentResult: Sendable, Equatable {
        /// FCM accepted it under this name (`projects/.../messages/...`).
        case sent(name: String)
        /// FCM refused it; `permanent` when retrying cannot help (400, 403, 404).
        case failed(error: String, permanent: Bool)
    }

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

    public init(id: ObjectID, status: RelayStatus, retryAt: Int64? = nil,
                components: [RelayComponent: ComponentResult] = [:], lastError: String? = nil) {
        self.id = id
        self.status = status
        self.retryAt = retryAt
        self.components = components
        self.lastError = lastError
    }

    /// The update that records this outcome and ends the lease.
    func update(now: Int64) -> BSONDocument {
        var set: [(key: String, value: BSONValue)] = [("relay.state", .string(status.rawValue)),
                                                      ("relay.updated_at", .int64(now))]
        var increments: [(key: String, value: BSONValue)] = []
        if let retryAt { set.append(("relay.due_at", .int64(retryAt))) }
        if let lastError { set.append(("relay.last_error", .string(lastError))) }
        for component in RelayComponent.allCases {
            guard let result = components[component] else { continue }
            let path = "relay.components.\(component.rawValue)"
            increments.append(("\(path).attempts", 1))
            switch result {
            case .sent(let name):
                set += [("\(path).state", "sent"), ("\(path).name", .string(name)), ("\(path).sent_at", .int64(now))]
            case .failed(let error, let permanent):
                set += [("\(path).last_error", .string(error)), ("\(path).failed_at", .int64(now))]
                if permanent { set.append(("\(path).state", "failed")) }
            }
        }
        var update: [(key: String, value: BSONValue)] = [
            ("$set", .document(BSONDocument(set))),
            ("$unset", ["relay.lease_owner": "", "relay.lease_until": ""]),
        ]
        if !increments.isEmpty { update.append(("$inc", .document(BSONDocument(increments)))) }
        return BSONDocument(update)
    }
}

import Mongo

/// The webhook outbox in `webhook_deliveries`, as the webhook worker claims and records it and admins list it.
///
/// Claims work as `OutboxDAO`'s: due deliveries are leased in one update each (no two leases ever hold one), every
/// write names the lease, so a worker whose lease ran out (it crashed or stalled) records nothing and the delivery is
/// due again for any replica. A lease is never renewed: it outlasts an attempt (resolution and the request's time-out)
/// many times over.
public struct WebhookDeliveryDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.webhookDeliveries)
    }

    /// Finished deliveries go at their `expire_at` (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(
        CollectionName.webhookDeliveries, field: "expire_at", retiredTTLIndex: "expire_at")

    /// The claim's index (pending only), a webhook's deliveries newest first, and the expiry of finished ones.
    static let indexes = [
        IndexModel(keys: ["state": 1, "due_at": 1], name: "state.due_at", partialFilter: ["state": "pending"]),
        IndexModel(keys: ["webhook": 1, "_id": -1], name: "webhook._id"),
        expiry.index,
    ]

    /// How long a delivered or failed delivery stays listed.
    public static let retention: Int64 = 7 * 86_400_000

    /// Pending and due at `now`, leased or not: what a claim reads on the claim index (`LeasedQueue`).
    static func due(now: Int64) -> BSONDocument {
        ["state": "pending", "due_at": ["$lte": .int64(now)]]
    }

    /// The deliveries as a leased queue: the lease at the top level, the due ones on the claim index.
    var queue: LeasedQueue {
        LeasedQueue(collection: collection, prefix: "", dueField: "due_at", due: Self.due(now:))
    }

    /// Leases up to `limit` of the most overdue deliveries for `owner` until `now + leaseMS`, counting an attempt on
    /// each; nil when none is due.
    /// - Throws: `DAOError`.
    public func claim(owner: String, now: Int64, leaseMS: Int64, limit: Int) async throws -> WebhookClaim? {
        try await mapErrors {
            guard
                let claim = try await queue.claim(
                    owner: owner, now: now, leaseMS: leaseMS, limit: limit, increment: Self.attempt)
            else { return nil }
            return WebhookClaim(
                lease: claim.lease, deliveries: claim.documents.compactMap(WebhookDelivery.init(document:)))
        }
    }

    /// What a claim counts on each delivery it takes (and a release takes back).
    private static let attempt: BSONDocument = ["attempts": 1]

    /// What one attempt came to, as recorded.
    public enum Outcome: Sendable, Hashable {
        /// The endpoint answered 2xx with `status`.
        case delivered(status: Int)
        /// Not delivered: tried again at `retryAt` (Unix ms). `status` when an answer came, else `error`.
        case retry(at: Int64, status: Int?, error: String?)
        /// Given up on: `status` or `error` of the last attempt.
        case failed(status: Int?, error: String?)
    }

    /// Records `outcome` for delivery `id` under `lease` at `now`, ending the lease; false when the lease no longer
    /// holds it (another worker took it over and records its own attempt).
    /// - Throws: `DAOError`.
    @discardableResult
    public func record(_ outcome: Outcome, for id: ObjectID, lease: String, now: Int64) async throws -> Bool {
        var set: BSONDocument
        var unset = queue.endingLease()
        func last(_ status: Int?, _ error: String?) {
            if let status { set["last_status"] = .int64(Int64(status)) } else { unset["last_status"] = "" }
            if let error { set["last_error"] = .string(error) } else { unset["last_error"] = "" }
        }
        switch outcome {
        case .delivered(let status):
            set = ["state": "delivered", "delivered_at": .int64(now), "expire_at": .datetime(now + Self.retention)]
            last(status, nil)
            unset["due_at"] = ""
        case .retry(let at, let status, let error):
            set = ["due_at": .int64(at)]
            last(status, error)
        case .failed(let status, let error):
            set = ["state": "failed", "failed_at": .int64(now), "expire_at": .datetime(now + Self.retention)]
            last(status, error)
            unset["due_at"] = ""
        }
        return try await mapErrors {
            try await queue.update(.objectID(id), lease: lease, ["$set": .document(set), "$unset": .document(unset)])
        }
    }

    /// Ends `lease` on delivery `id` without an outcome, its attempt uncounted, so any worker may claim it at once (a
    /// worker stopping before it sent it).
    /// - Throws: `DAOError`.
    public func release(_ id: ObjectID, lease: String) async throws {
        try await mapErrors { try await queue.release([.objectID(id)], leases: [lease], undoing: ["attempts": -1]) }
    }

    /// A page of webhook `webhook`'s deliveries, newest first, older than `before` when given.
    /// - Throws: `DAOError`.
    public func list(webhook: ObjectID, before: ObjectID?, limit: Int) async throws -> [WebhookDelivery] {
        var filter: BSONDocument = ["webhook": .objectID(webhook)]
        if let before { filter["_id"] = ["$lt": .objectID(before)] }
        return try await mapErrors {
            try await collection.find(filter, options: FindOptions(sort: ["_id": -1], limit: Int64(max(limit, 1))))
                .compactMap(WebhookDelivery.init(document:))
        }
    }
}

/// Deliveries one claim leased together.
public struct WebhookClaim: Sendable {
    /// The lease's name: outcomes are recorded only while it holds the delivery.
    public let lease: String
    /// The leased deliveries as stored after the claim (their `attempts` counts this one), most overdue first.
    public let deliveries: [WebhookDelivery]
}

import Mongo

/// The relay's outbox: messages whose `relay.state` is pending, claimed by workers with a lease.
///
/// Any number of workers in any number of hub processes share one database: a claim is one atomic
/// findOneAndUpdate that sets a lease, and every later write names the lease's owner, so a worker
/// whose lease ran out (it crashed or stalled) can no longer record anything.
public struct OutboxDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.message)
    }

    /// The index the claim query runs on.
    static let index = IndexModel(keys: ["relay.state": 1, "relay.due_at": 1], name: "relay.state.due_at",
                                  partialFilter: ["relay.state": "pending"])

    /// Claims the most overdue pending message for `owner` until `now + leaseMS`.
    /// - Throws: `DAOError`.
    public func claim(owner: String, now: Int64, leaseMS: Int64) async throws -> Message? {
        let document = try await mapErrors {
            try await collection.findOneAndUpdate(
                [
                    "relay.state": "pending",
                    "relay.due_at": ["$lte": .int64(now)],
                    "$or": [["relay.lease_until": ["$exists": false]], ["relay.lease_until": ["$lt": .int64(now)]]],
                ],
                [
                    "$set": ["relay.lease_owner": .string(owner), "relay.lease_until": .int64(now + leaseMS)],
                    "$inc": ["relay.attempts": 1],
                ],
                options: FindOneAndUpdateOptions(returnNew: true, sort: ["relay.due_at": 1])
            )
        }
        return document.flatMap(Message.init(document:))
    }

    /// Records that FCM accepted `component` under `name`; false when the lease was lost.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recordSent(_ id: ObjectID, owner: String, component: RelayComponent, name: String,
                           now: Int64) async throws -> Bool {
        let path = "relay.components.\(component.rawValue)"
        return try await update(id, owner: owner, [
            "$set": ["\(path).state": "sent", "\(path).name": .string(name), "\(path).sent_at": .int64(now)],
            "$inc": ["\(path).attempts": 1],
        ])
    }

    /// Records a failed attempt at `component`; `permanent` marks the component failed for good.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recordFailure(_ id: ObjectID, owner: String, component: RelayComponent, error: String,
                              permanent: Bool) async throws -> Bool {
        let path = "relay.components.\(component.rawValue)"
        var set: BSONDocument = ["\(path).last_error": .string(error)]
        if permanent { set["\(path).state"] = "failed" }
        return try await update(id, owner: owner, ["$set": .document(set), "$inc": ["\(path).attempts": 1]])
    }

    /// Ends `owner`'s lease, leaving the message in `status` (due again at `retryAt` when pending).
    /// - Throws: `DAOError`.
    @discardableResult
    public func release(_ id: ObjectID, owner: String, status: RelayStatus, retryAt: Int64? = nil,
                        lastError: String? = nil, now: Int64) async throws -> Bool {
        var set: BSONDocument = ["relay.state": .string(status.rawValue), "relay.updated_at": .int64(now)]
        if let retryAt { set["relay.due_at"] = .int64(retryAt) }
        if let lastError { set["relay.last_error"] = .string(lastError) }
        return try await update(id, owner: owner, [
            "$set": .document(set),
            "$unset": ["relay.lease_owner": "", "relay.lease_until": ""],
        ])
    }

    /// How many messages wait to be sent, and the due time of the oldest.
    /// - Throws: `DAOError`.
    public func backlog(now: Int64) async throws -> (count: Int64, oldestDueAt: Int64?) {
        try await mapErrors {
            let filter: BSONDocument = ["relay.state": "pending", "relay.due_at": ["$lte": .int64(now)]]
            let count = try await collection.countDocuments(filter)
            let oldest = try await collection.findOne(filter, projection: ["relay.due_at": 1], sort: ["relay.due_at": 1])
            return (count, oldest?[path: "relay.due_at"]?.int64Value)
        }
    }

    private func update(_ id: ObjectID, owner: String, _ update: BSONDocument) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(["_id": .objectID(id), "relay.lease_owner": .string(owner)], update)
        }
        return result.matchedCount == 1
    }
}

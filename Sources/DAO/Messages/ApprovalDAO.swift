import Mongo

/// The writes and reads of two-person approval on `message`: a held message (`relay.state` awaiting_approval, its
/// `approval` sub-document) is approved or rejected by one conditional update each, so two approvers racing leave
/// exactly one outcome; overridden messages (`override`) are listed for review.
public struct ApprovalDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.message)
    }

    /// The index the list of held messages runs on: it holds them alone, so other messages' inserts never write it.
    static let index = IndexModel(keys: ["approval.requested_at": 1], name: "approval.awaiting",
                                  partialFilter: ["relay.state": .string(RelayStatus.awaitingApproval.rawValue)])

    /// The index of the overridden messages an admin has yet to review.
    static let overrideIndex = IndexModel(keys: ["override.at": -1], name: "override.to_review",
                                          partialFilter: ["override.reviewed": false])

    /// The `approval` sub-document of a new held message: who asked, when, until when, and why it is held.
    public static func request(by sender: String, at now: Int64, expiresAt: Int64, reasons: [String]) -> BSONDocument {
        [
            "state": "awaiting", "requested_by": .string(sender), "requested_at": .int64(now),
            "expires_at": .int64(expiresAt), "reasons": .array(reasons.map(BSONValue.string)),
        ]
    }

    /// The `override` sub-document of a message an admin sent past the approval rule, to be reviewed.
    public static func override(by admin: String, reason: String, at now: Int64) -> BSONDocument {
        ["by": .string(admin), "reason": .string(reason), "at": .int64(now), "reviewed": false]
    }

    /// The filter of a message still held and not expired at `now`.
    private static func held(_ msiKey: ObjectID, now: Int64) -> BSONDocument {
        ["msi_key": .objectID(msiKey), "relay.state": .string(RelayStatus.awaitingApproval.rawValue),
         "approval.expires_at": ["$gt": .int64(now)]]
    }

    /// Approves the held message `msiKey` for `approver` at `now`: it becomes pending, due at `dueAt`, its retry
    /// deadline `deadlineAt`; returns the message as stored after, or nil when it was not held (approved, rejected,
    /// expired meanwhile).
    /// - Throws: `DAOError`.
    public func approve(_ msiKey: ObjectID, by approver: String, now: Int64, dueAt: Int64,
                        deadlineAt: Int64) async throws -> Message? {
        try await mapErrors {
            try await collection.findOneAndUpdate(Self.held(msiKey, now: now), ["$set": [
                "relay.state": "pending", "relay.due_at": .int64(dueAt), "relay.deadline_at": .int64(deadlineAt),
                "approval.state": "approved", "approval.by": .string(approver), "approval.at": .int64(now),
            ]])
        }.flatMap(Message.init(document:))
    }

    /// Rejects the held message `msiKey` for `approver` with `reason`; returns it as stored after, or nil when it
    /// was not held.
    /// - Throws: `DAOError`.
    public func reject(_ msiKey: ObjectID, by approver: String, reason: String, now: Int64) async throws -> Message? {
        try await mapErrors {
            try await collection.findOneAndUpdate(Self.held(msiKey, now: now), ["$set": [
                "relay.state": .string(RelayStatus.rejected.rawValue), "approval.state": "rejected",
                "approval.by": .string(approver), "approval.at": .int64(now), "approval.reason": .string(reason),
            ]])
        }.flatMap(Message.init(document:))
    }

    /// Records that the held message `msiKey` expired unapproved (`approval.state` expired; it stays held, never
    /// claimed); true when this call wrote it.
    /// - Throws: `DAOError`.
    public func markExpired(_ msiKey: ObjectID, now: Int64) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["msi_key": .objectID(msiKey), "relay.state": .string(RelayStatus.awaitingApproval.rawValue),
                 "approval.state": "awaiting", "approval.expires_at": ["$lte": .int64(now)]],
                ["$set": ["approval.state": "expired"]])
        }
        return result.modifiedCount == 1
    }

    /// The held messages whose request expired by `now` and is not yet recorded as expired, at most `limit`.
    /// - Throws: `DAOError`.
    public func expiredUnrecorded(now: Int64, limit: Int = 500) async throws -> [Message] {
        try await mapErrors {
            try await collection.find(
                ["relay.state": .string(RelayStatus.awaitingApproval.rawValue), "approval.state": "awaiting",
                 "approval.expires_at": ["$lte": .int64(now)]],
                options: FindOptions(projection: ["_id": 1, "msi_key": 1], sort: ["approval.requested_at": 1],
                                     limit: Int64(limit)))
        }.compactMap(Message.init(document:))
    }

    /// The held messages not expired at `now`, oldest request first, at most `limit`.
    /// - Throws: `DAOError`.
    public func awaiting(now: Int64, limit: Int = 500) async throws -> [Message] {
        try await mapErrors {
            try await collection.find(
                ["relay.state": .string(RelayStatus.awaitingApproval.rawValue), "approval.expires_at": ["$gt": .int64(now)]],
                options: FindOptions(sort: ["approval.requested_at": 1], limit: Int64(limit)))
        }.compactMap(Message.init(document:))
    }

    /// The overridden messages no admin has marked reviewed, newest first, at most `limit`.
    /// - Throws: `DAOError`.
    public func overridesToReview(limit: Int = 200) async throws -> [Message] {
        try await mapErrors {
            try await collection.find(["override.reviewed": false],
                                      options: FindOptions(sort: ["override.at": -1], limit: Int64(limit)))
        }.compactMap(Message.init(document:))
    }

    /// Marks the override of `msiKey` reviewed by `admin`; false when there is none to review.
    /// - Throws: `DAOError`.
    public func markReviewed(_ msiKey: ObjectID, by admin: String, now: Int64) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(["msi_key": .objectID(msiKey), "override.reviewed": false], [
                "$set": ["override.reviewed": true, "override.reviewed_by": .string(admin),
                         "override.reviewed_at": .int64(now)]])
        }
        return result.modifiedCount == 1
    }
}

import Mongo

/// The writes and reads of two-person approval on `message`: a held message (`relay.state` awaiting_approval, its
/// `approval` sub-document) is approved or rejected by one conditional update each, so two approvers racing leave
/// exactly one outcome; overridden messages (`override`) are listed for review.
///
/// Every text that awaits approval has a version (`approval.version`, 1 when the message is held, one more at each
/// correction of it): an approval names the version it approves and lands only while that version is current, so a
/// text changed after the approver read it is never approved unseen. A correction of an approved message waits as
/// `pending_correction` (the texts asked for, who asked, until when) under the next version.
///
/// The lists (held, corrections waiting, overrides to review) read the archive's queues (`MessageQueueDAO`): a
/// message enters one before the write that puts it there, and leaves it after the write that takes it out.
public struct ApprovalDAO: Sendable {
    let collection: MongoCollection
    let messages: MessageDAO
    let queues: MessageQueueDAO

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.message)
        self.messages = MessageDAO(database: database)
        self.queues = MessageQueueDAO(database: database)
    }

    /// The filter part that holds `approval.version` at `version` (a request stored before versions is version 1).
    /// Never a top-level `$or`: the embedded database serves no write whose filter has one from an index, and reads
    /// the whole archive instead (`$in` with `null` also matches a missing field).
    static func atVersion(_ version: Int64) -> BSONDocument {
        version == 1 ? ["approval.version": ["$in": [1, .null]]] : ["approval.version": .int64(version)]
    }

    /// The version of the text awaiting approval in `message` (its `approval.version`, 1 when not stored).
    public static func version(of message: Message) -> Int64 {
        message.document[path: "approval.version"]?.int64Value ?? 1
    }

    /// The `approval` sub-document of a new held message: who asked (the sender, and the person behind it, who may
    /// not approve), when, until when, why it is held, and the version of its text (1).
    public static func request(
        by sender: String, author: String, at now: Int64, expiresAt: Int64,
        reasons: [String]
    ) -> BSONDocument {
        [
            "state": "awaiting", "requested_by": .string(sender), "author": .string(author),
            "requested_at": .int64(now),
            "expires_at": .int64(expiresAt), "reasons": .array(reasons.map(BSONValue.string)), "version": 1,
        ]
    }

    /// The `override` sub-document of a message an admin sent past the approval rule, to be reviewed.
    public static func override(by admin: String, reason: String, at now: Int64) -> BSONDocument {
        ["by": .string(admin), "reason": .string(reason), "at": .int64(now), "reviewed": false]
    }

    /// The filter of a message still held and not expired at `now`.
    private static func held(_ msiKey: ObjectID, now: Int64) -> BSONDocument {
        [
            "msi_key": .objectID(msiKey), "relay.state": .string(RelayStatus.awaitingApproval.rawValue),
            "approval.expires_at": ["$gt": .int64(now)],
        ]
    }

    /// Approves version `version` of the held message `msiKey` for `approver` at `now`: it becomes pending, due at
    /// `dueAt`, its retry deadline `deadlineAt`; returns the message as stored after, or nil when it was not held at
    /// that version (approved, rejected, expired or corrected meanwhile). One update by `msi_key`, then a read.
    /// - Throws: `DAOError`.
    public func approve(
        _ msiKey: ObjectID, version: Int64, by approver: String, now: Int64, dueAt: Int64,
        deadlineAt: Int64
    ) async throws -> Message? {
        var filter = Self.held(msiKey, now: now)
        for element in Self.atVersion(version) { filter[element.key] = element.value }
        let result = try await mapErrors {
            try await collection.updateOne(
                filter,
                [
                    "$set": [
                        "relay.state": "pending", "relay.due_at": .int64(dueAt),
                        "relay.deadline_at": .int64(deadlineAt),
                        "approval.state": "approved", "approval.by": .string(approver), "approval.at": .int64(now),
                    ]
                ])
        }
        return result.matchedCount > 0 ? try await leaving(.approval, msiKey) : nil
    }

    /// The message `msiKey`, read after a write that took it out of `queue`, whose entry is removed.
    private func leaving(_ queue: MessageQueue, _ msiKey: ObjectID) async throws -> Message {
        await queues.leave(queue, message: msiKey)
        return try await messages.get(msiKey: msiKey)
    }

    /// Rejects the held message `msiKey` for `approver` with `reason`; returns it as stored after, or nil when it
    /// was not held. One update by `msi_key`, then a read.
    /// - Throws: `DAOError`.
    public func reject(_ msiKey: ObjectID, by approver: String, reason: String, now: Int64) async throws -> Message? {
        let result = try await mapErrors {
            try await collection.updateOne(
                Self.held(msiKey, now: now),
                [
                    "$set": [
                        "relay.state": .string(RelayStatus.rejected.rawValue), "approval.state": "rejected",
                        "approval.by": .string(approver), "approval.at": .int64(now),
                        "approval.reason": .string(reason),
                    ]
                ])
        }
        return result.matchedCount > 0 ? try await leaving(.approval, msiKey) : nil
    }

    /// Holds a correction of the approved message `msiKey` for a second person: `pending_correction` gets the
    /// fields asked for (`correction`: the given ones of title, desc, message, translations), who asked (`by`, and
    /// the person behind it, `author`), when and until when, and the text's version moves one up (a correction that
    /// waited already is replaced, and an approval of it no longer lands). Only while the message is approved, not
    /// withdrawn, at version `expectedVersion`; false otherwise (the caller reads it again).
    /// - Throws: `DAOError`.
    public func requestCorrection(
        _ msiKey: ObjectID, expectedVersion: Int64, correction: BSONDocument, by: String,
        author: String, now: Int64, expiresAt: Int64
    ) async throws -> Bool {
        var filter: BSONDocument = [
            "msi_key": .objectID(msiKey), "approval.state": "approved",
            "withdrawn": ["$exists": false],
        ]
        for element in Self.atVersion(expectedVersion) { filter[element.key] = element.value }
        let pending: BSONDocument = [
            "fields": .document(correction), "requested_by": .string(by), "author": .string(author),
            "requested_at": .int64(now), "expires_at": .int64(expiresAt),
        ]
        try await queues.enter(.correction, message: msiKey, expireAt: expiresAt)
        let result = try await mapErrors {
            try await collection.updateOne(
                filter,
                [
                    "$set": [
                        "pending_correction": .document(pending),
                        "approval.version": .int64(expectedVersion + 1),
                    ]
                ])
        }
        return result.matchedCount > 0
    }

    /// Rejects the correction waiting on `msiKey` at version `version`: it is dropped (the phones keep the approved
    /// text) and the version moves one up; false when none waits at that version.
    /// - Throws: `DAOError`.
    public func rejectCorrection(
        _ msiKey: ObjectID, version: Int64, by approver: String, reason: String,
        now: Int64
    ) async throws -> Bool {
        var filter: BSONDocument = ["msi_key": .objectID(msiKey), "pending_correction": ["$exists": true]]
        for element in Self.atVersion(version) { filter[element.key] = element.value }
        let result = try await mapErrors {
            try await collection.updateOne(
                filter,
                [
                    "$unset": ["pending_correction": ""],
                    "$set": [
                        "approval.version": .int64(version + 1),
                        "approval.correction_rejected": [
                            "by": .string(approver), "at": .int64(now),
                            "reason": .string(reason),
                        ],
                    ],
                ])
        }
        guard result.matchedCount > 0 else { return false }
        await queues.leave(.correction, message: msiKey)
        return true
    }

    /// The approved messages whose correction waits for a second person and has not expired at `now`, oldest
    /// request first, at most `limit`.
    /// - Throws: `DAOError`.
    public func correctionsAwaiting(now: Int64, limit: Int = 500) async throws -> [Message] {
        try await queues.find(
            ["pending_correction": ["$exists": true], "pending_correction.expires_at": ["$gt": .int64(now)]],
            in: .correction, options: FindOptions(sort: ["pending_correction.expires_at": 1], limit: Int64(limit))
        ).compactMap(Message.init(document:)).sorted {
            ($0.document[path: "pending_correction.requested_at"]?.int64Value ?? 0)
                < ($1.document[path: "pending_correction.requested_at"]?.int64Value ?? 0)
        }
    }

    /// Records that the held message `msiKey` expired unapproved (`approval.state` expired; it stays held, never
    /// claimed); true when this call wrote it.
    /// - Throws: `DAOError`.
    public func markExpired(_ msiKey: ObjectID, now: Int64) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(
                [
                    "msi_key": .objectID(msiKey), "relay.state": .string(RelayStatus.awaitingApproval.rawValue),
                    "approval.state": "awaiting", "approval.expires_at": ["$lte": .int64(now)],
                ],
                ["$set": ["approval.state": "expired"]])
        }
        guard result.modifiedCount == 1 else { return false }
        await queues.leave(.approval, message: msiKey)
        return true
    }

    /// The held messages whose request expired by `now` and is not yet recorded as expired, at most `limit`.
    /// - Throws: `DAOError`.
    public func expiredUnrecorded(now: Int64, limit: Int = 500) async throws -> [Message] {
        try await queues.find(
            [
                "relay.state": .string(RelayStatus.awaitingApproval.rawValue), "approval.state": "awaiting",
                "approval.expires_at": ["$lte": .int64(now)],
            ],
            in: .approval,
            options: FindOptions(
                projection: ["_id": 1, "msi_key": 1], sort: ["approval.requested_at": 1], limit: Int64(limit))
        ).compactMap(Message.init(document:))
    }

    /// The held messages not expired at `now`, oldest request first, at most `limit`.
    /// - Throws: `DAOError`.
    public func awaiting(now: Int64, limit: Int = 500) async throws -> [Message] {
        try await queues.find(
            [
                "relay.state": .string(RelayStatus.awaitingApproval.rawValue), "approval.state": "awaiting",
                "approval.expires_at": ["$gt": .int64(now)],
            ],
            in: .approval, options: FindOptions(sort: ["approval.requested_at": 1], limit: Int64(limit))
        ).compactMap(Message.init(document:))
    }

    /// The overridden messages no admin has marked reviewed, newest first, at most `limit`.
    /// - Throws: `DAOError`.
    public func overridesToReview(limit: Int = 200) async throws -> [Message] {
        try await queues.find(
            ["override.reviewed": false], in: .override,
            options: FindOptions(sort: ["override.at": -1], limit: Int64(limit))
        ).compactMap(Message.init(document:))
    }

    /// Marks the override of `msiKey` reviewed by `admin`; false when there is none to review.
    /// - Throws: `DAOError`.
    public func markReviewed(_ msiKey: ObjectID, by admin: String, now: Int64) async throws -> Bool {
        let result = try await mapErrors {
            try await collection.updateOne(
                ["msi_key": .objectID(msiKey), "override.reviewed": false],
                [
                    "$set": [
                        "override.reviewed": true, "override.reviewed_by": .string(admin),
                        "override.reviewed_at": .int64(now),
                    ]
                ])
        }
        guard result.modifiedCount == 1 else { return false }
        await queues.leave(.override, message: msiKey)
        return true
    }
}

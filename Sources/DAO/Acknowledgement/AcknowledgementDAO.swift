import HubTime
import Mongo

/// The escalation of messages that asked for an acknowledgement, kept on the message (`ack` and `audience_size`):
/// the audience fixed when the relay sent it, rounds of re-sends claimed by any replica under a lease in `ack`
/// (`lease_owner`, `lease_until`), each round's counts (`ack.rounds`), and the end (`finished_at`).
///
/// A claim reads the most overdue of the messages in the escalations' queue (`MessageQueue.escalation`: those with a
/// next step, beside the archive) and takes one by an atomic update on its `_id` and a read; every later write names
/// the lease, so a replica whose lease ran out records nothing more and the message is due again for another, which
/// resumes the round after its `ack.cursor`.
public struct AcknowledgementDAO: Sendable {
    let messages: MongoCollection
    let queues: MessageQueueDAO
    let now: UnixClock

    /// The indexes this DAO no longer uses, dropped at start: the first claim index (`$exists` filter). Its second,
    /// `ack.next_at.due`, became the escalations' queue (`MessageQueueDAO`).
    static let retiredIndexes = ["ack.next_at"]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.messages = database.collection(CollectionName.message)
        self.queues = MessageQueueDAO(database: database)
        self.now = now
    }

    // MARK: Fixing the audience

    /// Notes on `message` that its audience is fixed, `size` devices, at `sentAt` (Unix ms): its first check is due
    /// `withinSeconds` later, and it enters the escalations' queue. Only the first time (a message sent again after a
    /// crash keeps its first audience); returns whether this call fixed it.
    /// - Throws: `DAOError`.
    @discardableResult
    public func fix(message: Message, size: Int64, sentAt: Int64, withinSeconds: Int64) async throws -> Bool {
        let id = message.id
        try await queues.enter(.escalation, message: message.msiKey)
        let result = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "ack.within_s": ["$exists": true], "ack.sent_at": ["$exists": false]],
                [
                    "$set": [
                        "audience_size": .int64(size), "ack.sent_at": .int64(sentAt),
                        "ack.next_at": .int64(sentAt + withinSeconds * 1000), "ack.round": .int64(0),
                    ]
                ])
        }
        return result.modifiedCount > 0
    }

    // MARK: Claiming

    /// A next step due at `time`: the range of the claim index (its filter, `$gt: 0`, named).
    static func due(_ time: Int64) -> BSONValue {
        ["$gt": 0, "$lte": .int64(time)]
    }

    /// The escalations as a leased queue: the lease in `ack`, the due steps among the escalations' queue.
    var queue: LeasedQueue {
        LeasedQueue(collection: messages, prefix: "ack.", dueField: "ack.next_at") { ["ack.next_at": Self.due($0)] }
    }

    /// Claims the most overdue message whose escalation's next step has come, for `owner` for `leaseMS`; nil when none
    /// is due. Returns it with the lease's name (`LeasedQueue`: never a `findAndModify`, whose cost on the embedded
    /// database grows with the archive).
    /// - Throws: `DAOError`.
    public func claim(owner: String, leaseMS: Int64) async throws -> (progress: AckProgress, lease: String)? {
        guard
            let claim = try await mapErrors({ () -> LeasedQueue.Claim? in
                let time = now()
                guard
                    let candidates = try await queues.filter(["ack.next_at": Self.due(time)], in: .escalation)
                else { return nil }
                return try await queue.claim(
                    owner: owner, now: time, leaseMS: leaseMS, limit: 1, candidates: candidates)
            }), let document = claim.documents.first
        else { return nil }
        let lease = claim.lease
        guard let message = Message(document: document) else { return nil }
        guard let progress = AckProgress(message: message) else {
            // Not an escalation this hub can read: taken off the queue rather than claimed again and again.
            if try await update(
                message.id, lease: lease, ["$unset": .document(queue.endingLease(["ack.next_at": ""]))])
            {
                await queues.leave(.escalation, message: message.msiKey)
            }
            return nil
        }
        return (progress, lease)
    }

    /// Moves `lease` on message `id` to `leaseMS` from now; false when it no longer holds the message.
    /// - Throws: `DAOError`.
    public func renew(message id: ObjectID, lease: String, leaseMS: Int64) async throws -> Bool {
        try await renew(message: id, lease: lease, until: now() + leaseMS)
    }

    /// Moves `lease` on message `id` to `until` (Unix ms); false when it no longer holds the message.
    /// - Throws: `DAOError`.
    public func renew(message id: ObjectID, lease: String, until: Int64) async throws -> Bool {
        try await mapErrors { try await queue.renew([.objectID(id)], leases: [lease], until: until) } > 0
    }

    /// Gives message `id` back at once, for any replica (this one stops).
    /// - Throws: `DAOError`.
    public func release(message id: ObjectID, lease: String) async throws {
        _ = try await update(id, lease: lease, ["$unset": .document(queue.endingLease())])
    }

    // MARK: Rounds

    /// Opens round `round` (1-based) of message `id` under `lease`, renewed for `leaseMS`: its counts start at zero in
    /// `ack.rounds`, unless a replica that lost the message opened it already (then they go on). False when the lease
    /// no longer holds.
    /// - Throws: `DAOError`.
    public func open(round: Int64, message id: ObjectID, lease: String, leaseMS: Int64) async throws -> Bool {
        let index = round - 1
        _ = try await mapErrors {
            try await messages.updateOne(
                [
                    "_id": .objectID(id), "ack.lease_owner": .string(lease), "ack.round": .int64(index),
                    "ack.rounds.\(index)": ["$exists": false],
                ],
                [
                    "$push": [
                        "ack.rounds": [
                            "round": .int64(round), "started_at": .int64(now()), "silent": 0, "sent": 0,
                            "failed": 0, "unregistered": 0, "skipped": 0,
                        ]
                    ]
                ])
        }
        return try await renew(message: id, lease: lease, leaseMS: leaseMS)
    }

    /// Adds a page's `counts` to round `round` of message `id` and notes that its devices up to the delivery `cursor`
    /// are dealt with, under `lease`; false when the lease no longer holds.
    /// - Throws: `DAOError`.
    public func progress(
        round: Int64, message id: ObjectID, lease: String, cursor: String,
        counts: AckRoundCounts
    ) async throws -> Bool {
        try await update(
            id, lease: lease,
            [
                "$set": ["ack.cursor": .string(cursor)],
                "$inc": .document(BSONDocument(counts.increments("ack.rounds.\(round - 1)"))),
            ])
    }

    /// Ends round `round` of message `id` under `lease`: the next step is due at `nextAt` (Unix ms), and the message
    /// is free for any replica then. False when the lease no longer holds.
    /// - Throws: `DAOError`.
    public func close(round: Int64, message id: ObjectID, lease: String, nextAt: Int64) async throws -> Bool {
        try await update(
            id, lease: lease,
            [
                "$set": [
                    "ack.round": .int64(round), "ack.next_at": .int64(nextAt),
                    "ack.rounds.\(round - 1).finished_at": .int64(now()),
                ],
                "$unset": .document(queue.endingLease(["ack.cursor": ""])),
            ])
    }

    /// Ends `message`'s escalation under `lease`: `silent` devices never acknowledged; it leaves the escalations'
    /// queue. False when the lease no longer holds.
    /// - Throws: `DAOError`.
    public func finish(message: Message, lease: String, silent: Int64) async throws -> Bool {
        guard
            try await update(
                message.id, lease: lease,
                [
                    "$set": ["ack.finished_at": .int64(now()), "ack.unacknowledged": .int64(silent)],
                    "$unset": .document(queue.endingLease(["ack.next_at": "", "ack.cursor": ""])),
                ])
        else { return false }
        await queues.leave(.escalation, message: message.msiKey)
        return true
    }

    /// Applies `update` to message `id` while `lease` holds it; whether it did.
    private func update(_ id: ObjectID, lease: String, _ update: BSONDocument) async throws -> Bool {
        try await mapErrors { try await queue.update(.objectID(id), lease: lease, update) }
    }
}

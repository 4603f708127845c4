import Mongo

extension AcknowledgementDAO {
    /// Makes the next round of re-sends of message `id` due now (`ack.next_at`), so that the escalation worker takes
    /// it at its next poll instead of after `within_s`: one conditional update, only while the escalation has a next
    /// step (its audience fixed, not finished), fewer than `resend` rounds were made (the sender's bound; the request
    /// never changes) and no replica holds a round under way. Returns whether it did.
    /// - Throws: `DAOError`.
    public func resendNow(message id: ObjectID, resend: Int64) async throws -> Bool {
        let time = now()
        let result = try await mapErrors {
            try await messages.updateOne(
                [
                    "_id": .objectID(id), "ack.next_at": ["$exists": true], "ack.finished_at": ["$exists": false],
                    "ack.round": ["$lt": .int64(resend)], "ack.lease_until": ["$not": ["$gte": .int64(time)]],
                ],
                ["$set": ["ack.next_at": .int64(time)]])
        }
        return result.matchedCount > 0
    }
}

extension AckProgress {
    /// When the escalation ended (Unix ms, `ack.finished_at`); nil while it goes on.
    public var finishedAt: Int64? { message.document[path: "ack.finished_at"]?.int64Value }
    /// Until when a replica holds a step under way (Unix ms, `ack.lease_until`); nil when none does.
    public var leaseUntil: Int64? { message.document[path: "ack.lease_until"]?.int64Value }
    /// How many devices never acknowledged, once the escalation ended (`ack.unacknowledged`).
    public var unacknowledged: Int64? { message.document[path: "ack.unacknowledged"]?.int64Value }
}

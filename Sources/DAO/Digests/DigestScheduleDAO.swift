import HubTime
import Mongo

/// A person's digest as the relay reads it when due: whose, from when, and when it was due.
public struct DueDigest: Sendable {
    /// The person.
    public let person: String
    /// The start of the digest's window (Unix ms, exclusive): the end of the last one, or when the person first
    /// chose a digest.
    public let since: Int64
    /// When it was due.
    public let dueAt: Int64
}

/// The last digest a person was sent: when, how many messages, its summary line.
public struct SentDigest: Sendable, Hashable {
    public let at: Int64
    public let count: Int
    public let summary: String

    public init(at: Int64, count: Int, summary: String) {
        (self.at, self.count, self.summary) = (at, count, summary)
    }
}

/// The daily digests, in `digest_schedule`: one document per person with a subject or group in digest mode (`_id`
/// the person id; `due_at`, the next digest, Unix ms; `since`, where its window starts; `last`, the last one sent),
/// planned by the hub when the person's settings change, read by the relay when due and recorded once sent. Nothing
/// in it grows with the messages: what a digest holds is read from the archive when it is sent.
///
/// The documents carry no lease of their own: one replica at a time sends digests, under the named lease
/// `DigestScheduleDAO.senderLease` (`LeaseDAO`), so a round costs the database a read of what is due and a write of
/// what was sent, not a lease written on each digest and taken off again (on the embedded database an `updateMany`
/// costs 1-2 ms a document: the lease's two writes were half of a digest's cost). A digest sent and not recorded
/// (the sender died between the two) is due still, and the next holder of the lease sends it again.
public struct DigestScheduleDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The due digests, the most overdue first, from the index alone.
    static let indexes = [IndexModel(keys: ["due_at": 1], name: "due_at")]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.digestSchedule)
        self.now = now
    }

    /// The lease (`LeaseDAO`) under which one replica at a time sends the digests.
    public static let senderLease = "digest-sender"

    /// Plans `person`'s next digest at `dueAt`; its window starts now when it is their first (a digest never holds
    /// what came before the person chose it).
    /// - Throws: `DAOError`.
    public func plan(_ person: String, dueAt: Int64) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(person)],
                ["$set": ["due_at": .int64(dueAt)], "$setOnInsert": ["since": .int64(now())]],
                options: UpdateOptions(upsert: true))
        }
    }

    /// Ends `person`'s digests (nothing of theirs is in digest mode any more).
    /// - Throws: `DAOError`.
    public func cancel(_ person: String) async throws {
        _ = try await mapErrors { try await collection.deleteOne(["_id": .string(person)]) }
    }

    /// Up to `limit` digests due by `now`, the most overdue first: one read on the `due_at` index. The caller holds
    /// `senderLease`.
    /// - Throws: `DAOError`.
    public func due(now: Int64, limit: Int) async throws -> [DueDigest] {
        let documents = try await mapErrors {
            try await collection.find(
                ["due_at": ["$lte": .int64(now)]],
                options: FindOptions(
                    projection: ["_id": 1, "due_at": 1, "since": 1], sort: ["due_at": 1], limit: Int64(limit)))
        }
        return documents.compactMap { document in
            guard let person = document["_id"]?.stringValue, let dueAt = document["due_at"]?.int64Value else {
                return nil
            }
            return DueDigest(
                person: person, since: document["since"]?.int64Value ?? dueAt - 86_400_000, dueAt: dueAt)
        }
    }

    /// A digest of a claim, done: when the next is due and what was sent (nil: it held nothing).
    public struct Completion: Sendable {
        public var digest: DueDigest
        public var next: Int64
        public var sent: SentDigest?

        public init(digest: DueDigest, next: Int64, sent: SentDigest?) {
            self.digest = digest
            self.next = next
            self.sent = sent
        }
    }

    /// Records `completions`: each window ends at `through` (the next one starts there), the next is due at its
    /// `next`, and its `sent` (nil: it held nothing and was not sent) is kept as the last one. One `updateMany` for
    /// each group sharing their next time and what was sent (a round's digests of one hour and one set of messages
    /// share them); answers how many were recorded. A digest planned again meanwhile (the person chose another hour:
    /// due after `through`) keeps its new plan.
    /// - Throws: `DAOError`.
    @discardableResult
    public func done(_ completions: [Completion], through: Int64) async throws -> Int {
        struct Shared: Hashable {
            var next: Int64
            var sent: SentDigest?
        }
        var recorded = 0
        for (shared, group) in Dictionary(grouping: completions, by: { Shared(next: $0.next, sent: $0.sent) }) {
            var set: BSONDocument = ["since": .int64(through), "due_at": .int64(shared.next)]
            if let sent = shared.sent {
                set["last"] = [
                    "at": .int64(sent.at), "count": .int64(Int64(sent.count)), "summary": .string(sent.summary),
                ]
            }
            let ids = group.map { BSONValue.string($0.digest.person) }
            for chunk in IDChunks.of(ids) {
                recorded += Int(
                    try await mapErrors {
                        try await collection.updateMany(
                            ["_id": ["$in": .array(Array(chunk))], "due_at": ["$lte": .int64(through)]],
                            ["$set": .document(set)])
                    }.matchedCount)
            }
        }
        return recorded
    }

    /// Puts `digest` off unsent (FCM asked to wait for the person's devices): due again at `retryAt`, its window as
    /// it was; a digest planned again meanwhile keeps its new plan.
    /// - Throws: `DAOError`.
    public func retry(_ digest: DueDigest, at retryAt: Int64) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(digest.person), "due_at": .int64(digest.dueAt)],
                ["$set": ["due_at": .int64(retryAt)]])
        }
    }

    /// When `person`'s next digest is due and the last one sent; nil when the person has no digest.
    /// - Throws: `DAOError`.
    public func status(of person: String) async throws -> (dueAt: Int64, last: SentDigest?)? {
        guard let document = try await mapErrors({ try await collection.findOne(["_id": .string(person)]) }),
            let dueAt = document["due_at"]?.int64Value
        else { return nil }
        let last = document["last"]?.documentValue.flatMap { last -> SentDigest? in
            guard let at = last["at"]?.int64Value else { return nil }
            return SentDigest(
                at: at, count: Int(last["count"]?.int64Value ?? 0), summary: last["summary"]?.stringValue ?? "")
        }
        return (dueAt, last)
    }
}

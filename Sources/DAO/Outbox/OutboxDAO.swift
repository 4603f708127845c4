import Mongo

/// The relay's outbox: messages whose `relay.state` is pending, claimed by workers in batches under a lease.
///
/// Any number of workers in any number of hub processes share one database. A claim marks many due
/// messages with a lease of its own in one atomic update per document (so no two leases ever hold a
/// message at once), and every later write names that lease: a worker whose lease ran out (it crashed
/// or stalled) can no longer record anything, and the message is due again for others.
public struct OutboxDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.message)
    }

    /// The index the claim query runs on.
    static let index = IndexModel(
        keys: ["relay.state": 1, "relay.due_at": 1], name: "relay.state.due_at",
        partialFilter: ["relay.state": "pending"])

    /// Pending and due at `now`, leased or not: what a claim reads on the outbox index (`LeasedQueue`).
    static func due(now: Int64) -> BSONDocument {
        ["relay.state": "pending", "relay.due_at": ["$lte": .int64(now)]]
    }

    /// The outbox as a leased queue: the lease in `relay`, the due messages on the outbox index.
    var queue: LeasedQueue {
        LeasedQueue(collection: collection, prefix: "relay.", dueField: "relay.due_at", due: Self.due(now:))
    }

    /// Claims up to `limit` of the most overdue messages for `owner` until `now + leaseMS`, or nil when none
    /// is due; never one of `held` (the worker's own, whose lease may have run out while their last write is
    /// on its way). With `due`, only messages due within it (a slice of a backlog: see below). Three commands
    /// however many messages it claims: find candidates, lease them, read them back.
    ///
    /// A server without a limit pushed into its index scan (SecantusDB) reads every pending message due by `now`
    /// for each claim, so a backlog of 10,000 costs each claim 0.3 s: the relay then falls further behind the more
    /// it has to do. A slice (`due`) reads only what is pending in it. Either way the lease is checked here rather
    /// than in the query (`LeasedQueue`).
    /// - Throws: `DAOError`.
    public func claim(
        owner: String, now: Int64, leaseMS: Int64, limit: Int, excluding held: [ObjectID] = [],
        due: ClosedRange<Int64>? = nil
    ) async throws -> OutboxBatch? {
        try await mapErrors {
            // A slice is read whole (no limit: the messages this worker or another holds must not hide the free ones
            // behind them; a slice is a few hundred ms of messages). Held messages are left out here rather than in
            // the query (a long `$nin` costs every candidate a scan of it): one is a candidate only in the rare moment
            // its lease ran out before its last write landed.
            let slice: BSONDocument? = due.map {
                [
                    "relay.state": "pending",
                    "relay.due_at": ["$gte": .int64($0.lowerBound), "$lte": .int64(min($0.upperBound, now))],
                ]
            }
            guard
                let claim = try await queue.claim(
                    owner: owner, now: now, leaseMS: leaseMS, limit: limit, skipping: Set(held), candidates: slice,
                    increment: ["relay.attempts": 1])
            else { return nil }
            return OutboxBatch(
                lease: claim.lease, leaseUntil: claim.until,
                messages: claim.documents.compactMap(Message.init(document:)))
        }
    }

    /// Moves the lease of `batch` on to `until`, for a batch still being sent; false when the lease was lost.
    /// - Throws: `DAOError`.
    @discardableResult
    public func extend(_ batch: OutboxBatch, until: Int64) async throws -> Bool {
        try await renew(batch.messages.map(\.id), leases: [batch.lease], until: until) > 0
    }

    /// The most message ids one command names (`_id: {$in: [...]}`; `IDChunks` says why).
    public static let idsPerCommand = IDChunks.perCommand

    /// Moves on to `until` the leases among `leases` that still hold the messages `ids`, `idsPerCommand` messages
    /// a command; returns how many it moved.
    /// - Throws: `DAOError`.
    public func renew(_ ids: [ObjectID], leases: Set<String>, until: Int64) async throws -> Int {
        try await mapErrors { try await queue.renew(ids.map(BSONValue.objectID), leases: leases, until: until) }
    }

    /// Which of the messages `ids` one of `leases` still holds (after a renewal moved fewer than asked).
    /// - Throws: `DAOError`.
    public func stillHeld(_ ids: [ObjectID], leases: Set<String>) async throws -> Set<ObjectID> {
        guard !leases.isEmpty else { return [] }
        var held: Set<ObjectID> = []
        for chunk in IDChunks.of(ids) {
            let documents = try await mapErrors {
                try await collection.find(
                    queue.held(chunk.map(BSONValue.objectID), leases: leases),
                    options: FindOptions(projection: ["_id": 1]))
            }
            held.formUnion(documents.compactMap { $0["_id"]?.objectIDValue })
        }
        return held
    }

    /// Ends the leases among `leases` on the messages `ids` without recording anything, so that any worker may
    /// claim them at once (a worker stopping before it sent them).
    /// - Throws: `DAOError`.
    public func release(_ ids: [ObjectID], leases: Set<String>) async throws {
        try await mapErrors { try await queue.release(ids.map(BSONValue.objectID), leases: leases) }
    }

    /// The `relay.edit` of those of the messages `ids` that a correction or withdrawal changed while they were being
    /// sent (`MessageDAO.correct`, `withdraw`): one query by `_id` per `idsPerCommand` messages, its cost that of
    /// the messages named, never of the collection.
    /// - Throws: `DAOError`.
    public func edits(of ids: [ObjectID]) async throws -> [ObjectID: Int64] {
        var edits: [ObjectID: Int64] = [:]
        for chunk in IDChunks.of(ids) {
            let documents = try await mapErrors {
                try await collection.find(
                    ["_id": IDChunks.membership(chunk), "relay.edit": ["$exists": true]],
                    options: FindOptions(projection: ["_id": 1, "relay.edit": 1]))
            }
            for document in documents {
                if let id = document["_id"]?.objectIDValue, let edit = document[path: "relay.edit"]?.int64Value {
                    edits[id] = edit
                }
            }
        }
        return edits
    }

    /// The message `id` as stored now (a worker reads it again after an edit); nil when there is none.
    /// - Throws: `DAOError`.
    public func message(_ id: ObjectID) async throws -> Message? {
        try await mapErrors { try await collection.findOne(["_id": .objectID(id)]) }.flatMap(Message.init(document:))
    }

    /// Writes the outcomes of one lease's messages in one command and ends the lease on each;
    /// returns how many were written (fewer when the lease ran out and another worker took over).
    /// - Throws: `DAOError`.
    @discardableResult
    public func record(_ outcomes: [RelayOutcome], lease: String, now: Int64) async throws -> Int {
        try await record(outcomes.map { $0.update(lease: lease, now: now) })
    }

    /// Writes `updates` (each message's under its own lease) in one command, messages of the same shape sharing a
    /// statement (`RelayUpdate.statements`); returns how many messages were written (fewer when a lease ran out
    /// and another worker took over).
    /// - Throws: `DAOError`.
    @discardableResult
    public func record(_ updates: [RelayUpdate]) async throws -> Int {
        let result = try await mapErrors { try await collection.bulkUpdate(RelayUpdate.statements(updates)) }
        return Int(result.matchedCount)
    }

    /// How far before its record's `since` a message of a worker may be stamped: the stamp is taken a moment
    /// before the worker numbers the message, on another thread.
    static let handBackMargin: Int64 = 60_000

    /// Hands back to the outbox the messages `progress`'s worker stored and had not done with when it was
    /// taken over: they become pending, due at once, for any worker to claim. Returns how many.
    /// - Throws: `DAOError`.
    public func handBack(_ progress: RelayProgressDAO.Progress) async throws -> Int {
        try await handBack(owner: progress.owner, seqs: ["$gt": .int64(progress.through)], since: progress.since)
    }

    /// Hands back to the outbox the messages of the record `owner` numbered `seqs`, those that were stored
    /// (an insert's outcome was unknown); `since`: when the first ticket was given (Unix ms). Returns how many.
    /// - Throws: `DAOError`.
    public func handBack(owner: String, seqs: [Int64], since: Int64) async throws -> Int {
        try await handBack(owner: owner, seqs: ["$in": .array(seqs.map(BSONValue.int64))], since: since)
    }

    /// One command, which the `timestamp` index bounds to the messages stored since `since`.
    private func handBack(owner: String, seqs: BSONValue, since: Int64) async throws -> Int {
        // `timestamp` first: the embedded server plans on the first indexed field it meets.
        let filter: BSONDocument = [
            "timestamp": ["$gte": .int64(since - Self.handBackMargin)],
            "relay.state": "direct", "relay.lease_owner": .string(owner), "relay.seq": seqs,
        ]
        let result = try await mapErrors {
            try await collection.updateMany(
                filter,
                [
                    "$set": ["relay.state": "pending"], "$unset": ["relay.lease_owner": "", "relay.seq": ""],
                ])
        }
        return Int(result.modifiedCount)
    }

    /// How many messages stand at `status`, a message sent by the process that stored it counted as `.sent`
    /// once that process's progress passed it and as `.pending` until then (for tests and the operator; it
    /// reads every such message).
    /// - Throws: `DAOError`.
    public func count(_ status: RelayStatus, progress: RelayProgressDAO) async throws -> Int64 {
        var total = try await mapErrors {
            try await collection.countDocuments(["relay.state": .string(status.rawValue)])
        }
        guard status == .sent || status == .pending else { return total }
        var through: [String: Int64] = [:]
        for record in try await progress.all() { through[record.owner] = record.through }
        let direct = try await mapErrors {
            try await collection.find(["relay.state": "direct"], options: FindOptions(projection: ["relay": 1]))
        }
        for document in direct {
            guard let relay = RelayState(message: document)?.direct else { continue }
            let sent = through[relay.owner].map { relay.seq <= $0 } ?? false
            if sent == (status == .sent) { total += 1 }
        }
        return total
    }

    /// The due time (Unix ms) of the oldest message waiting for a worker at `now` (due, and no lease holds it), or
    /// nil when none waits: one read of the outbox index. A message a worker is sending is not waiting.
    /// - Throws: `DAOError`.
    public func oldestWaitingDueAt(now: Int64) async throws -> Int64? {
        let candidates = try await mapErrors {
            try await collection.find(
                Self.due(now: now),
                options: FindOptions(
                    projection: ["_id": 1, "relay.lease_until": 1, "relay.due_at": 1], sort: ["relay.due_at": 1],
                    limit: Int64(1 + LeasedQueue.leasedAllowance)))
        }
        return candidates.first { queue.isFree($0, at: now) }?[
            path: "relay.due_at"]?
            .int64Value
    }

    /// How many messages wait to be sent, and the due time of the oldest.
    /// - Throws: `DAOError`.
    public func backlog(now: Int64) async throws -> (count: Int64, oldestDueAt: Int64?) {
        try await mapErrors {
            let filter: BSONDocument = ["relay.state": "pending", "relay.due_at": ["$lte": .int64(now)]]
            let count = try await collection.countDocuments(filter)
            let oldest = try await collection.findOne(
                filter, projection: ["relay.due_at": 1], sort: ["relay.due_at": 1])
            return (count, oldest?[path: "relay.due_at"]?.int64Value)
        }
    }
}

extension Message {
    /// When the relay is to send the message (`relay.due_at`, Unix ms), if it is waiting.
    public var dueAt: Int64? { document[path: "relay.due_at"]?.int64Value }
}

/// Messages one claim leased together.
public struct OutboxBatch: Sendable {
    /// The lease's name: outcomes are written only while it holds the message.
    public let lease: String
    /// When the lease runs out unless extended (Unix ms).
    public let leaseUntil: Int64
    /// The leased messages as stored after the claim, most overdue first.
    public let messages: [Message]
}

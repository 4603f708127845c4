import Mongo

/// One lease encoding and one claim protocol for every queue of work the replicas share: the relay's outbox
/// (`relay.`), the escalation rounds (`ack.`), webhook deliveries and quiet-hours deferrals (top level).
///
/// A lease is two fields set and ended together, `<prefix>lease_owner` (the claim's name: the process's name and a
/// fresh id) and `<prefix>lease_until` (Unix ms), so "no lease, or one that ran out" is one condition on
/// `lease_until`. A claim takes several documents in three commands whatever their number:
/// 1. the most overdue documents are read on the queue's index by their due time alone, and those whose lease, if
///    any, ran out are picked here: a condition on the lease in the query (`$not: {$gte: now}`, which also matches a
///    missing lease) makes SecantusDB leave the index and read the whole collection;
/// 2. one `updateMany` that names their `_id`s first and checks the lease again (so no two leases ever hold a
///    document, and a server that plans by the first indexed field it meets visits only those documents);
/// 3. a read of what this claim's lease holds (another replica may have taken some first).
/// Never a `findAndModify`, whose cost on the embedded database grows with the collection. Every later write names
/// the lease, so a process whose lease ran out (it crashed or stalled) records nothing and the work is due again.
struct LeasedQueue: Sendable {
    let collection: MongoCollection
    /// Where the lease lives in a document: "" at the top level, or a subdocument's path and a dot ("relay.").
    let prefix: String
    /// The field the queue's index orders due documents by (`relay.due_at`).
    let dueField: String
    /// What is due at a time, leased or not: a range of the queue's index.
    let due: @Sendable (Int64) -> BSONDocument

    /// How many leased documents a claim's read looks past: what the workers of a few replicas hold at once.
    static let leasedAllowance = 512

    var ownerField: String { prefix + "lease_owner" }
    var untilField: String { prefix + "lease_until" }

    /// A claim's lease: its name, and until when it holds unless renewed (Unix ms).
    struct Claim: Sendable {
        let lease: String
        let until: Int64
        let documents: [BSONDocument]
    }

    /// A fresh lease name for `owner`: the process's name and a new id, so each claim's writes name that claim.
    static func leaseName(owner: String) -> String {
        "\(owner)/\(ObjectID().hex)"
    }

    // MARK: Claiming

    /// Claims for `owner` until `now + leaseMS` up to `limit` of the most overdue documents no lease holds (never one
    /// of `skipped`), applying `increment` (an attempt's count) with the lease; nil when none could be taken. The read
    /// looks at `limit` plus `leasedAllowance` of the documents due at `now`, or at the whole of `candidates` (a
    /// narrower range of the same index: a slice of a backlog, whose held documents must not hide the free ones). When
    /// every document of a first pick was taken by another replica first, the next free ones are tried.
    /// - Throws: what the collection throws (callers map it to `DAOError`).
    func claim(
        owner: String, now: Int64, leaseMS: Int64, limit: Int, skipping skipped: Set<ObjectID> = [],
        candidates: BSONDocument? = nil, increment: BSONDocument? = nil, order: BSONDocument? = nil
    ) async throws -> Claim? {
        let limit = max(limit, 1)
        let read = try await collection.find(
            candidates ?? due(now),
            options: FindOptions(
                projection: Self.fields([("_id", 1), (untilField, 1), (dueField, 1)]),
                sort: Self.fields([(dueField, 1)]),
                limit: candidates == nil ? Int64(limit + Self.leasedAllowance) : nil))
        let free = read.filter { document in
            if let id = document.objectID("_id"), skipped.contains(id) { return false }
            return isFree(document, at: now)
        }.compactMap { $0["_id"] }
        let lease = Self.leaseName(owner: owner), until = now + leaseMS
        var set: BSONDocument = [:]
        set[ownerField] = .string(lease)
        set[untilField] = .int64(until)
        var update: BSONDocument = ["$set": .document(set)]
        if let increment { update["$inc"] = .document(increment) }
        for start in stride(from: 0, to: free.count, by: limit) {
            let ids = Array(free[start..<min(start + limit, free.count)])
            let taken = try await collection.updateMany(
                BSONDocument([(key: "_id", value: ["$in": .array(ids)])] + claimable(now).elements), update)
            guard taken.modifiedCount > 0 else { continue }
            let documents = try await collection.find(
                Self.fields([("_id", ["$in": .array(ids)]), (ownerField, .string(lease))]),
                options: FindOptions(sort: order ?? Self.fields([(dueField, 1)])))
            return Claim(lease: lease, until: until, documents: documents)
        }
        return nil
    }

    /// Due at `now` and no lease holds it: what the claim's update checks again, after the `_id`s.
    func claimable(_ now: Int64) -> BSONDocument {
        var filter = due(now)
        filter[untilField] = ["$not": ["$gte": .int64(now)]]
        return filter
    }

    /// Whether no lease holds `document` at `now` (a missing lease holds nothing).
    func isFree(_ document: BSONDocument, at now: Int64) -> Bool {
        (document[path: untilField]?.int64Value ?? .min) < now
    }

    /// A document of `pairs` in order: the lease's field names depend on the queue.
    static func fields(_ pairs: [(String, BSONValue)]) -> BSONDocument {
        BSONDocument(pairs.map { (key: $0.0, value: $0.1) })
    }

    // MARK: Holding

    /// The documents `ids` while one of `leases` holds them.
    func held(_ ids: some Sequence<BSONValue>, leases: Set<String>) -> BSONDocument {
        let owner: BSONValue =
            leases.count == 1 ? .string(leases.first!) : ["$in": .array(leases.sorted().map(BSONValue.string))]
        return Self.fields([("_id", ["$in": .array(Array(ids))]), (ownerField, owner)])
    }

    /// Applies `update` to document `id` while `lease` holds it; whether it did.
    func update(_ id: BSONValue, lease: String, _ update: BSONDocument) async throws -> Bool {
        try await collection.updateOne(Self.fields([("_id", id), (ownerField, .string(lease))]), update).matchedCount
            > 0
    }

    /// Moves on to `until` the leases among `leases` that still hold the documents `ids`, `IDChunks.perCommand`
    /// a command; returns how many it moved.
    func renew(_ ids: [BSONValue], leases: Set<String>, until: Int64) async throws -> Int {
        guard !leases.isEmpty else { return 0 }
        var moved = 0
        for chunk in IDChunks.of(ids) {
            moved += Int(
                try await collection.updateMany(
                    held(chunk, leases: leases), ["$set": .document(Self.fields([(untilField, .int64(until))]))]
                ).matchedCount)
        }
        return moved
    }

    /// `$unset` of the lease's two fields, and `more`.
    func endingLease(_ more: BSONDocument = [:]) -> BSONDocument {
        var unset = more
        unset[ownerField] = ""
        unset[untilField] = ""
        return unset
    }

    /// Ends the leases among `leases` on the documents `ids` without recording anything (undoing `increment`, an
    /// attempt counted by the claim), so that any replica may claim them at once: a worker stopping before it did
    /// the work.
    func release(_ ids: [BSONValue], leases: Set<String>, undoing increment: BSONDocument? = nil) async throws {
        guard !leases.isEmpty else { return }
        var update: BSONDocument = ["$unset": .document(endingLease())]
        if let increment { update["$inc"] = .document(increment) }
        for chunk in IDChunks.of(ids) {
            _ = try await collection.updateMany(held(chunk, leases: leases), update)
        }
    }
}

import Mongo

/// The first step of a claim, as every claim of the hub makes it: the most overdue documents are read on their
/// index by their state and due time alone, and those whose lease, if any, has run out are picked here. A condition
/// on the lease in the query (`$not: {$gte: now}`, which also matches a missing lease) makes SecantusDB leave the
/// index and read the whole collection, the archive of every message for the outbox. The second step, the atomic
/// update that takes them, names their `_id` first and checks the lease again.
enum LeaseCandidates {
    /// How many leased documents a claim's read looks past: what the workers of a few replicas hold at once.
    static let leasedAllowance = 512

    /// The `_id`s of `documents` (read with their lease at `leasePath`) that no lease holds at `now`, in order,
    /// at most `limit`, leaving out `skipped`.
    static func free(
        _ documents: [BSONDocument], leasePath: String, now: Int64, limit: Int,
        skipping skipped: Set<ObjectID> = []
    ) -> [BSONValue] {
        Array(
            documents.filter { document in
                guard let id = document.objectID("_id"), !skipped.contains(id) else { return false }
                return isFree(document, leasePath: leasePath, now: now)
            }.compactMap { $0["_id"] }.prefix(max(limit, 1)))
    }

    /// Whether no lease holds `document` at `now` (a missing lease holds nothing).
    static func isFree(_ document: BSONDocument, leasePath: String, now: Int64) -> Bool {
        (document[path: leasePath]?.int64Value ?? .min) < now
    }
}

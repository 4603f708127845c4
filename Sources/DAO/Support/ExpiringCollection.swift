import Mongo

/// A collection whose documents go once a date of theirs is `afterSeconds` past: used assertions, idempotency keys,
/// sessions, rate windows, the queues' entries and more. The hub removes them itself (`ExpirySweepDAO`), by a range of
/// a plain index on the date, rather than through a TTL index: the embedded database answers a TTL index by reading
/// every document of the collection once a minute while it holds its lock (4 s at the end of `make bench-enrolment`,
/// with 20,000 used assertions: every command of every client waited that long), and a range of the index costs it
/// only the documents that expired. On MongoDB the same range delete does what its TTL monitor did.
public struct ExpiringCollection: Sendable {
    /// The collection.
    public let collection: String
    /// The date field (a BSON date) its documents expire by.
    public let field: String
    /// How long after that date a document goes.
    public let afterSeconds: Int64
    /// The name of the TTL index the collection had before the hub removed its documents itself: dropped at start,
    /// so that the plain index on the same field can be made.
    let retiredTTLIndex: String

    init(_ collection: String, field: String, afterSeconds: Int64 = 0, retiredTTLIndex: String) {
        self.collection = collection
        self.field = field
        self.afterSeconds = afterSeconds
        self.retiredTTLIndex = retiredTTLIndex
    }

    /// The plain index the sweep's range reads.
    var index: IndexModel { IndexModel(keys: [field: 1], name: "\(field).expiry") }

    /// What has expired at `now` (Unix ms): a range of `index`.
    func expired(at now: Int64) -> BSONDocument {
        [field: ["$lt": .datetime(now - afterSeconds * 1_000)]]
    }
}

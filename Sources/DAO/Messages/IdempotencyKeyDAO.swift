import HubTime
import Mongo

/// The `Idempotency-Key`s senders gave with their messages, in `idempotency_keys`: one document per sender and
/// key, `{_id: {sender, key}, fingerprint, message, created_at}`, holding the whole message document the first
/// request chose (its `_id`, `msi_key`, time and relay plan). A retry with the key stores that same document,
/// so whichever request gets there first stores it and the others find it stored: one message, any replica.
/// Keys are removed 24 hours after their first use (`ExpiringCollection`). Records of concurrent requests (a burst of scripted
/// sends, an event's reminders) share insert commands (`InsertBatcher`): make one DAO per process.
public struct IdempotencyKeyDAO: Sendable {
    let collection: MongoCollection
    let inserts: InsertBatcher

    /// How long a key is kept.
    public static let lifetimeSeconds: Int32 = 24 * 3600

    /// A key goes `lifetimeSeconds` after it was made (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(
        CollectionName.idempotencyKeys, field: "created_at", afterSeconds: Int64(lifetimeSeconds),
        retiredTTLIndex: "created_at")

    /// The index `DatabaseIndexes.ensure` creates: expiry (`_id` is the unique one).
    static let indexes = [
        expiry.index
    ]

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.idempotencyKeys)
        self.inserts = InsertBatcher(collection: collection)
    }

    /// Insert commands this DAO sent so far (records gathered in one command count once).
    public var insertCommands: Int { inserts.commandsSent }

    /// What a key stands for when a request claims it.
    public enum Claim: Sendable {
        /// The key is new: it now stands for the request's own message.
        case claimed
        /// An earlier request with the same key and fingerprint chose this message document.
        case earlier(BSONDocument)
        /// An earlier request used the key with another fingerprint (another body).
        case otherRequest
    }

    /// Records that `key` of `sender` stands for `message` (a message document not yet stored), unless an earlier
    /// request recorded it already.
    /// - Throws: `DAOError` `.unavailable` when the database did not settle it by `deadline` (the message is not
    ///   stored then, whatever became of the record).
    public func claim(
        sender: String, key: String, fingerprint: String, message: BSONDocument,
        deadline: ContinuousClock.Instant
    ) async throws -> Claim {
        let id: BSONValue = ["sender": .string(sender), "key": .string(key)]
        let record: BSONDocument = [
            "_id": id, "fingerprint": .string(fingerprint), "message": .document(message),
            "created_at": .datetime(UnixTime.nowMilliseconds()),
        ]
        while true {
            do {
                // A record of another request under the key fails alone with `duplicateKey` (`InsertBatcher`).
                try await withDeadline(deadline) { try await inserts.insert(record) }
                return .claimed
            } catch let error as MongoError where error.code == .duplicateKey {
                let found = try await mapErrors {
                    try await withDeadline(deadline) { try await collection.findOne(["_id": id]) }
                }
                // Gone between the two commands (expired): claim it again.
                guard let found, let earlier = found["message"]?.documentValue else { continue }
                if earlier["_id"] == message["_id"] { return .claimed }  // an earlier attempt of this request
                return found["fingerprint"]?.stringValue == fingerprint ? .earlier(earlier) : .otherRequest
            } catch let error as MongoError where error.isUnavailable && ContinuousClock.now < deadline {
                // Inserting the same record again is harmless: a duplicate that is ours is `.claimed`.
                try? await Task.sleep(for: .milliseconds(100))
            } catch let error as MongoError where error.isUnavailable {
                // Whatever became of the record, the message itself was not stored: a plain "unavailable".
                throw DAOError(.unavailable, "the database is unavailable", underlying: error)
            }
        }
    }
}

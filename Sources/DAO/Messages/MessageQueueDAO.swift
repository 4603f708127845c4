import HubModel
import Mongo

/// The archive's rare queues: the few messages held for approval, overridden and not reviewed, with a correction
/// waiting, live as a banner, or with an escalation to come.
///
/// They are kept beside the archive, in `message_queues`, not in indexes of `message`: the embedded database writes
/// every index of a collection at every insert and every update, partial indexes included, so five queue indexes on
/// the archive cost every message (each of them about as much as a plain index). An entry names its queue and its
/// message (`{_id: "<queue>:<msi_key>", q, k: msi_key, expire_at?}`); the message keeps the fields that say it is in
/// the queue (`relay.state`, `override`, `pending_correction`, `banner`, `ack.next_at`), and every read of a queue
/// reads its entries, then their messages by `msi_key` with the queue's own condition. So:
/// - an entry is written before the write that puts its message in the queue (the insert, or the update): a message
///   is never in a queue without its entry;
/// - an entry whose message left the queue (or whose insert failed) selects nothing, and is removed by the writer
///   that takes the message out, or by the database once its `expire_at` has passed (queues whose messages expire).
public struct MessageQueueDAO: Sendable {
    let entries: MongoCollection
    let messages: MongoCollection

    public init(database: MongoDatabase) {
        self.entries = database.collection(CollectionName.messageQueues)
        self.messages = database.collection(CollectionName.message)
    }

    /// Entries past their `expire_at` are removed by the hub's sweep (`ExpirySweepDAO`).
    static let expiry = ExpiringCollection(
        CollectionName.messageQueues, field: "expire_at", retiredTTLIndex: "expire_at")

    /// A queue's entries are read by its name; the expiry's index.
    static let indexes = [
        IndexModel(keys: ["q": 1], name: "q"),
        expiry.index,
    ]

    /// How long an entry outlives the end of its message's stay in an expiring queue, so a reader near that end
    /// still finds it.
    static let graceMS: Int64 = 24 * 3600 * 1000

    /// At most this many entries of one queue are read at once: each is a live message of a rare kind.
    static let readLimit = 5_000

    // MARK: Entering and leaving

    /// The fields of the entry that puts message `msiKey` in `queue`, removed by the database a grace after
    /// `expireAt` (Unix ms) when given; its `_id` is `key(queue, msiKey)`.
    static func fields(_ queue: MessageQueue, message msiKey: ObjectID, expireAt: Int64?) -> BSONDocument {
        var fields: BSONDocument = ["q": .string(queue.rawValue), "k": .objectID(msiKey)]
        if let expireAt { fields["expire_at"] = .datetime(expireAt + graceMS) }
        return fields
    }

    /// The `_id` of message `msiKey`'s entry in `queue`.
    static func key(_ queue: MessageQueue, _ msiKey: ObjectID) -> BSONValue {
        .string("\(queue.rawValue):\(msiKey.hex)")
    }

    /// The entry that puts message `msiKey` in `queue`.
    static func entry(_ queue: MessageQueue, message msiKey: ObjectID, expireAt: Int64?) -> BSONDocument {
        fields(queue, message: msiKey, expireAt: expireAt).prepending("_id", key(queue, msiKey))
    }

    /// The entries a new message's document puts it in (`MessageQueue.entered(by:)`), written before the message;
    /// entries already written (a retried insert) are kept.
    /// - Throws: `DAOError`.
    func enter(insertOf document: BSONDocument) async throws {
        guard let msiKey = document["msi_key"]?.objectIDValue else { return }
        let entries = MessageQueue.entered(by: document).map {
            Self.entry($0.queue, message: msiKey, expireAt: $0.until)
        }
        guard !entries.isEmpty else { return }
        try await mapErrors { _ = try await self.entries.insertManyIgnoringDuplicates(entries) }
    }

    /// Puts message `msiKey` in `queue` (until a grace after `expireAt`, when given; an entry there already takes
    /// that end), before the update that does.
    /// - Throws: `DAOError`.
    public func enter(_ queue: MessageQueue, message msiKey: ObjectID, expireAt: Int64? = nil) async throws {
        let fields = Self.fields(queue, message: msiKey, expireAt: expireAt)
        try await mapErrors {
            _ = try await entries.updateOne(
                ["_id": Self.key(queue, msiKey)], ["$set": .document(fields)], options: UpdateOptions(upsert: true))
        }
    }

    /// Removes message `msiKey`'s entry in `queue`, after the write that took it out; whether the database took the
    /// removal. Never an error: the write that mattered has landed, and an entry left behind selects nothing (every
    /// read states the queue's condition) until its `expire_at`, if it has one.
    @discardableResult
    public func leave(_ queue: MessageQueue, message msiKey: ObjectID) async -> Bool {
        await leave([queue], message: msiKey)
    }

    /// Removes message `msiKey`'s entries in `queues` (those it has), after the write that took it out of them; as
    /// `leave(_:message:)`.
    @discardableResult
    public func leave(_ queues: [MessageQueue], message msiKey: ObjectID) async -> Bool {
        let keys = queues.map { Self.key($0, msiKey) }
        let filter: BSONDocument = keys.count == 1 ? ["_id": keys[0]] : ["_id": ["$in": .array(keys)]]
        return (try? await entries.deleteMany(filter)) != nil
    }

    // MARK: Reading

    /// The `msi_key`s of the messages `queue`'s entries name.
    /// - Throws: `DAOError`.
    func members(of queue: MessageQueue) async throws -> [BSONValue] {
        try await mapErrors {
            try await entries.find(
                ["q": .string(queue.rawValue)],
                options: FindOptions(projection: ["k": 1], limit: Int64(Self.readLimit)))
        }.compactMap { $0["k"] }
    }

    /// `filter` narrowed to the messages of `queue` (their `msi_key`s first, so the server reads those alone); nil when
    /// the queue is empty. `filter` states the queue's condition (`MessageQueue.condition`) or a narrower one.
    /// - Throws: `DAOError`.
    func filter(_ filter: BSONDocument, in queue: MessageQueue) async throws -> BSONDocument? {
        let ids = try await members(of: queue)
        guard !ids.isEmpty else { return nil }
        return BSONDocument([(key: "msi_key", value: ["$in": .array(ids)])] + filter.elements)
    }

    /// The messages of `queue` that match `filter`, in `options`' order and limit.
    /// - Throws: `DAOError`.
    func find(_ filter: BSONDocument, in queue: MessageQueue, options: FindOptions = FindOptions()) async throws
        -> [BSONDocument]
    {
        guard let filter = try await self.filter(filter, in: queue) else { return [] }
        return try await mapErrors { try await messages.find(filter, options: options) }
    }

    // MARK: Moving from the archive's indexes

    /// Writes the entries of the messages an archive index of a queue still holds, then drops that index: once, at the
    /// first start of a hub that keeps its queues here (a read of the archive by the queue's condition, a page of
    /// 1,000 at a time; an index already dropped is not looked for again). Entries already written are kept, so a
    /// start stopped half-way is finished by the next.
    /// - Throws: `DAOError`.
    static func moveFromArchiveIndexes(in database: MongoDatabase) async throws {
        let messages = database.collection(CollectionName.message)
        let names = try await mapErrors { try await messages.indexNames() }
        let queues = MessageQueueDAO(database: database)
        for queue in MessageQueue.allCases where names.contains(queue.retiredIndex) {
            var after: BSONValue?
            while true {
                var filter = queue.condition
                if let after { filter["_id"] = ["$gt": after] }
                let page = try await mapErrors {
                    try await messages.find(
                        filter,
                        options: FindOptions(projection: MessageQueue.entryFields, sort: ["_id": 1], limit: 1_000))
                }
                guard let last = page.last?["_id"] else { break }
                let entries = page.compactMap { document -> BSONDocument? in
                    guard let msiKey = document["msi_key"]?.objectIDValue else { return nil }
                    return entry(queue, message: msiKey, expireAt: queue.until(of: document))
                }
                try await mapErrors { _ = try await queues.entries.insertManyIgnoringDuplicates(entries) }
                after = last
            }
            try await mapErrors { try await messages.dropIndex(named: queue.retiredIndex) }
        }
    }
}

/// The archive's rare queues (`MessageQueueDAO`): each a condition on a message's own fields.
public enum MessageQueue: String, Sendable, CaseIterable {
    /// Held for approval and not yet recorded expired (`relay.state` awaiting_approval, `approval.state` awaiting).
    case approval
    /// Sent by an admin past the approval rule, not yet reviewed (`override.reviewed` false).
    case override
    /// An approved message's correction waiting for a second person (`pending_correction`).
    case correction
    /// A banner apps show at launch while it lasts (`banner`).
    case banner
    /// An acknowledgement's escalation with a step to come (`ack.next_at`).
    case escalation

    /// What a message in the queue matches; every read of the queue states it (or a narrower condition).
    public var condition: BSONDocument {
        switch self {
        case .approval: ["relay.state": .string(RelayStatus.awaitingApproval.rawValue), "approval.state": "awaiting"]
        case .override: ["override.reviewed": false]
        case .correction: ["pending_correction": ["$exists": true]]
        case .banner: ["banner": true]
        case .escalation: ["ack.next_at": ["$gt": 0]]
        }
    }

    /// The partial index of `message` the queue ran on before it had entries of its own.
    var retiredIndex: String {
        switch self {
        case .approval: "approval.awaiting"
        case .override: "override.to_review"
        case .correction: "pending_correction.expires_at"
        case .banner: "banner.timestamp"
        case .escalation: "ack.next_at.due"
        }
    }

    /// The fields of a message its entry is made of (its `msi_key` and what `until(of:)` reads): what the move
    /// from the archive's indexes reads of each message.
    static let entryFields: BSONDocument = [
        "msi_key": 1, "timestamp": 1, "approval.expires_at": 1, "pending_correction.expires_at": 1,
        "relay.expires_at": 1, "relay.send_at": 1,
    ]

    /// When `message`'s stay in the queue ends by itself (Unix ms): a held message's or a correction's expiry, a
    /// banner's end; nil for the queues a message leaves only when someone acts (a review, an escalation's end).
    func until(of message: BSONDocument) -> Int64? {
        switch self {
        case .approval: message[path: "approval.expires_at"]?.int64Value
        case .correction: message[path: "pending_correction.expires_at"]?.int64Value
        case .banner:
            message[path: "relay.expires_at"]?.int64Value
                ?? max(message["timestamp"]?.int64Value ?? 0, message[path: "relay.send_at"]?.int64Value ?? 0)
                + MessageDAO.bannerLifetimeWithoutExpiryMS
        case .override, .escalation: nil
        }
    }

    /// The queues a new message's document puts it in, each with the end of its stay (`until(of:)`): the one policy
    /// every insert into the archive follows (`MessageDAO.add(document:)`). Corrections and escalations start with
    /// an update, which writes its own entry.
    static func entered(by document: BSONDocument) -> [(queue: MessageQueue, until: Int64?)] {
        var queues: [MessageQueue] = []
        if document[path: "relay.state"]?.stringValue == RelayStatus.awaitingApproval.rawValue {
            queues.append(.approval)
        }
        if document[path: "override.reviewed"] == .bool(false) { queues.append(.override) }
        if document["banner"] == .bool(true) { queues.append(.banner) }
        return queues.map { ($0, $0.until(of: document)) }
    }
}

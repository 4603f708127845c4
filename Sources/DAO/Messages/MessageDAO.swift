#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import HubModel
import HubTime
import Mongo

/// Messages: the archive in `message`, one document per message sent.
public struct MessageDAO: Sendable {
    let collection: MongoCollection
    /// New messages from concurrent requests share insert commands.
    let inserts: InsertBatcher
    /// The archive's rare queues, which a message enters before its insert or update (`MessageQueueDAO`).
    let queues: MessageQueueDAO
    /// The clock that stamps new messages, in Unix milliseconds (tests may pin it).
    let now: UnixClock
    /// How long an insert may go unacknowledged before its outcome is settled (`add(_:deadline:)`). The hub sets
    /// its configured deadline (`DATABASE_WRITE_DEADLINE_MS`); other users (tools, tests) wait a minute.
    public let writeDeadline: Duration

    public init(
        database: MongoDatabase, writeDeadline: Duration = .seconds(60),
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.collection = database.collection(CollectionName.message)
        self.inserts = InsertBatcher(collection: collection)
        self.queues = MessageQueueDAO(database: database)
        self.writeDeadline = writeDeadline
        self.now = now
    }

    /// Archives a message with a new `msi_key` and the current time, and returns it as stored once the
    /// database has acknowledged it (concurrent calls share insert commands).
    /// - Throws: `DAOError`: `.outcomeUnknown` when the insert could not be confirmed by `deadline` (default:
    ///   `writeDeadline` from now), `.unavailable` when it is known not to have happened.
    public func add(_ draft: MessageDraft, deadline: ContinuousClock.Instant? = nil) async throws -> Message {
        try await add(document: document(for: draft), deadline: deadline)
    }

    /// The document `add` would store for `draft`: its ids and time chosen now.
    public func document(for draft: MessageDraft) -> BSONDocument {
        var elements: [(key: String, value: BSONValue)] = [
            ("_id", .objectID(ObjectID())),
            ("msi_key", .objectID(ObjectID())),
            ("title", .string(draft.title)),
            ("desc", .string(draft.desc)),
            ("message", .string(draft.message)),
        ]
        // A message to persons and groups has no topic: its `to` says whom it is for.
        if let recipients = draft.recipients {
            elements.append(("to", .document(recipients.document)))
        } else {
            elements.append(("topic_key", .string(draft.topicKey)))
        }
        elements += [
            ("distribution", .string(draft.distribution.rawValue)),
            ("urgency", .string(draft.urgency.rawValue)),
            ("sender", draft.roomPost.map { ["person": .string($0.person)] } ?? .string(draft.sender)),
            ("timestamp", .int64(now())),
        ]
        if let post = draft.roomPost { elements.append(("room", .string(post.room))) }
        if !draft.data.isEmpty {
            elements.append(
                (
                    "data",
                    .document(
                        BSONDocument(
                            draft.data.sorted { $0.key < $1.key }.map {
                                (key: $0.key, value: BSONValue.string($0.value))
                            }))
                ))
        }
        elements.append(contentsOf: draft.broadcast.document.elements)
        elements.append(contentsOf: draft.extra.elements)
        return BSONDocument(elements)
    }

    /// Stores a message document made by `document(for:)` (again, for a retry: its `_id` makes that idempotent),
    /// after the entries of the rare queues it is in (held, to review, a banner: `MessageQueue.entered(by:)`).
    /// - Throws: `DAOError`, as `add`.
    public func add(document: BSONDocument, deadline: ContinuousClock.Instant? = nil) async throws -> Message {
        let deadline = deadline ?? ContinuousClock.now.advanced(by: writeDeadline)
        try await queues.enter(insertOf: document)
        try await mapErrors { try await inserts.insert(document, deadline: deadline) }
        guard let message = Message(document: document) else {
            preconditionFailure("a message made here has ObjectIds")
        }
        return message
    }

    /// Whether an insert has waited for the database longer than `writeDeadline` and is still waiting.
    public var insertsStalled: Bool { inserts.hasCommandRunning(longerThan: writeDeadline) }

    /// The message whose `msi_key` is `msiKey`.
    /// - Throws: `DAOError` `.messageNotFound`.
    public func get(msiKey: ObjectID) async throws -> Message {
        let document = try await mapErrors { try await collection.findOne(["msi_key": .objectID(msiKey)]) }
        guard let document, let message = Message(document: document) else {
            throw DAOError(.messageNotFound, "no message has the msi_key \(msiKey.hex)")
        }
        return message
    }

    /// A page of messages, newest first, filtered by topic, sender, time and send time. The send time is a condition
    /// of the query itself, so a page of sent messages is full and its cursor exact; it is checked on the rows the
    /// `timestamp` (or `topic_key.timestamp`) index gives in order: scheduled messages are few, and the scan passes
    /// over them.
    /// - Throws: `DAOError`.
    public func page(_ query: MessageQuery) async throws -> MessagePage {
        var conditions: [BSONValue] = []
        if query.topicKeys.count == 1 {
            conditions.append(["topic_key": .string(query.topicKeys[0])])
        } else if !query.topicKeys.isEmpty {
            conditions.append(["topic_key": ["$in": .array(query.topicKeys.map(BSONValue.string))]])
        }
        if let sender = query.sender { conditions.append(["sender": .string(sender)]) }
        switch query.addressed {
        case .all: break
        // A sample of a topic's devices (`sample`) is as private as a message to persons: it went to some devices only.
        case .none: conditions.append(["to": ["$exists": false], "sample": ["$exists": false]])
        case .sentBy(let sender):
            conditions.append([
                "$or": [["to": ["$exists": false], "sample": ["$exists": false]], ["sender": .string(sender)]]
            ])
        }
        if let since = query.since { conditions.append(["timestamp": ["$gte": .int64(since)]]) }
        if let sentBy = query.sentBy {
            // `$not` also matches a missing field: a message sent on arrival, or the legacy hub's.
            let sent: BSONValue = ["relay.send_at": ["$not": ["$gt": .int64(sentBy)]]]
            conditions.append(query.scheduledOf.map { ["$or": [sent, ["sender": .string($0)]]] } ?? sent)
        }
        if let after = query.after {
            conditions.append([
                "$or": [
                    ["timestamp": ["$lt": .int64(after.timestamp)]],
                    ["timestamp": .int64(after.timestamp), "_id": ["$lt": .objectID(after.id)]],
                ]
            ])
        }
        let filter: BSONDocument = conditions.isEmpty ? [:] : ["$and": .array(conditions)]
        return try await newestFirst(filter, limit: query.limit)
    }

    /// Up to `limit` messages matching `filter`, newest first (timestamp, then `_id`), and the next page's cursor:
    /// one more than asked is read to tell whether another page follows.
    /// - Throws: `DAOError`.
    func newestFirst(_ filter: BSONDocument, limit: Int) async throws -> MessagePage {
        let limit = max(limit, 1)
        let documents = try await mapErrors {
            try await collection.find(
                filter, options: FindOptions(sort: ["timestamp": -1, "_id": -1], limit: Int64(limit + 1)))
        }
        let messages = documents.compactMap(Message.init(document:))
        let page = Array(messages.prefix(limit))
        let next = messages.count > limit ? page.last.map { MessageCursor(timestamp: $0.timestamp, id: $0.id) } : nil
        return MessagePage(messages: page, next: next)
    }
}

extension MessageDAO {
    /// Up to `limit` messages to group `group` (`to.groups`), newest first, after `after` (nil: from the newest),
    /// sent by `sentBy` (Unix ms: not scheduled for later), on the `to.groups.timestamp` index: a room's history.
    /// - Throws: `DAOError`.
    public func groupPage(_ group: String, after: MessageCursor?, limit: Int, sentBy: Int64) async throws
        -> MessagePage
    {
        var filter: BSONDocument = [
            "to.groups": .string(group), "relay.send_at": ["$not": ["$gt": .int64(sentBy)]],
        ]
        if let after {
            filter["$or"] = [
                ["timestamp": ["$lt": .int64(after.timestamp)]],
                ["timestamp": .int64(after.timestamp), "_id": ["$lt": .objectID(after.id)]],
            ]
        }
        return try await newestFirst(filter, limit: limit)
    }

    /// A page of the messages of `query.topicKeys` from `query.since`, oldest first (timestamp, then `_id`),
    /// leaving out the ones whose `ttl` has run out (`relay.expires_at` at or before `query.now`) and the scheduled
    /// ones not yet due (`relay.send_at` after it); a message with no `relay` (the legacy hub's) is always in.
    ///
    /// One query whatever the number of topics: `topic_key` `$in` with a range on `timestamp`, sorted on
    /// (timestamp, `_id`), which the `topic_key.timestamp` index serves read backwards, one index scan per topic
    /// merged in order (MongoDB's explode-for-sort, up to 200 scans), so no topic's older messages are read and
    /// nothing is sorted in memory. The first page's filter has no top-level operator; a later page adds one `$or`
    /// for the rows that share the cursor's millisecond.
    /// - Throws: `DAOError`.
    public func catchUp(_ query: CatchUpQuery) async throws -> MessagePage {
        guard !query.topicKeys.isEmpty || query.person != nil else { return MessagePage(messages: [], next: nil) }
        let limit = max(query.limit, 1)
        let documents = try await mapErrors {
            try await collection.find(
                Self.catchUpFilter(query),
                options: FindOptions(sort: Self.catchUpSort, limit: Int64(limit + 1)))
        }
        let messages = documents.compactMap(Message.init(document:))
        let page = Array(messages.prefix(limit))
        let next = messages.count > limit ? page.last.map { MessageCursor(timestamp: $0.timestamp, id: $0.id) } : nil
        return MessagePage(messages: page, next: next)
    }

    /// The order of a catch-up: oldest first.
    static let catchUpSort: BSONDocument = ["timestamp": 1, "_id": 1]

    /// The filter of a catch-up page (tests read its plan with `explain`).
    public static func catchUpFilter(_ query: CatchUpQuery) -> BSONDocument {
        let since = max(query.since, query.after?.timestamp ?? query.since)
        let topics: BSONDocument = ["topic_key": ["$in": .array(query.topicKeys.map(BSONValue.string))]]
        // A bound device also gets its person's messages and its person's groups' (each branch on its own index).
        var audience: BSONDocument = topics
        if let person = query.person {
            var branches: [BSONValue] = [.document(topics), ["to.persons": .string(person)]]
            if !query.groups.isEmpty {
                // Not a message that leaves the person out (a room's own posts, a staff send's exceptions).
                branches.append([
                    "to.groups": ["$in": .array(query.groups.map(BSONValue.string))],
                    "to.except.persons": ["$ne": .string(person)],
                ])
            }
            audience = ["$and": [["$or": .array(branches)]]]
        }
        var filter: BSONDocument = audience
        filter["timestamp"] = ["$gte": .int64(since)]
        // `$not` also matches a missing field: no ttl, or no relay at all.
        filter["relay.expires_at"] = ["$not": ["$lte": .int64(query.now)]]
        // Scheduled and not yet due: `send_at`, as the client gave it (`due_at` moves with FCM retries, and a
        // message FCM has yet to take is exactly what a catch-up is for).
        filter["relay.send_at"] = ["$not": ["$gt": .int64(query.now)]]
        // A sample went to the devices picked, by token: the others never catch up with it.
        filter["sample"] = ["$exists": false]
        // A withdrawn message is for no phone any more (its tombstone stays in the history).
        filter["withdrawn"] = ["$exists": false]
        if let after = query.after {
            // `timestamp >= after.timestamp` holds already: past the cursor is a later millisecond or a later `_id`.
            filter["$or"] = [["timestamp": ["$gt": .int64(after.timestamp)]], ["_id": ["$gt": .objectID(after.id)]]]
        }
        return filter
    }
}

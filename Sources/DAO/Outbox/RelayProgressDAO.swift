import Mongo

/// How far each relay worker got with the messages it stored and sends itself (`RelayStatus.direct`): one
/// small document per worker in `relay_progress`, so that a message sent costs the database nothing after
/// its insert.
///
/// A worker numbers the messages it stores (`relay.seq`) and, every few milliseconds, writes `through`: every
/// message up to that number is sent, or has its outcome written to it, or was never stored. The same write
/// keeps the worker alive (`until`). Once `until` has passed, any worker takes the record over (`taken_at`,
/// after which its owner writes nothing more) and hands back to the outbox the owner's messages past
/// `through`: those, and only those, are sent again.
public struct RelayProgressDAO: Sendable {
    let collection: MongoCollection

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.relayProgress)
    }

    /// A worker's record as stored.
    public struct Progress: Sendable, Equatable {
        /// The worker (`_id`).
        public var owner: String
        /// Every message of the owner up to this `relay.seq` is done with.
        public var through: Int64
        /// No message of the owner past `through` was stored before this (Unix ms).
        public var since: Int64
        /// The owner is alive until then (Unix ms).
        public var until: Int64
        /// When another worker took the record over (Unix ms), if one did.
        public var takenAt: Int64?
        /// When the owner last wrote it (Unix ms).
        public var updatedAt: Int64

        /// The time (Unix ms) the owner's oldest message not yet done with was stored, when it was outstanding for
        /// more than a second at the owner's last write; else nil. `since` is that time, or the time of the write
        /// itself (read a moment before it) when nothing was outstanding: the second tells the two apart. Nil too
        /// once another worker took the record over (its messages went back to the outbox).
        public var oldestOutstanding: Int64? {
            takenAt == nil && since < updatedAt - 1_000 ? since : nil
        }

        init?(_ document: BSONDocument) {
            guard let owner = document["_id"]?.stringValue else { return nil }
            self.owner = owner
            self.through = document["through"]?.int64Value ?? 0
            self.since = document["since"]?.int64Value ?? 0
            self.until = document["until"]?.int64Value ?? 0
            self.takenAt = document["taken_at"]?.int64Value
            self.updatedAt = document["updated_at"]?.int64Value ?? 0
        }
    }

    /// Writes `owner`'s progress and keeps it alive until `until`; false when another worker took the record
    /// over (the owner must then send none of its messages, and store new ones under another name).
    /// - Throws: `DAOError`.
    public func report(owner: String, through: Int64, since: Int64, until: Int64, now: Int64) async throws -> Bool {
        do {
            let result = try await mapErrors {
                try await collection.updateOne(
                    ["_id": .string(owner), "taken_at": ["$exists": false]],
                    [
                        "$set": [
                            "through": .int64(through), "since": .int64(since), "until": .int64(until),
                            "updated_at": .int64(now),
                        ]
                    ], options: UpdateOptions(upsert: true))
            }
            return result.matchedCount > 0 || result.upsertedID != nil
        } catch let error as DAOError where error.code == .duplicate {
            return false  // the record exists and is taken: the upsert's insert met its `_id`
        }
    }

    /// Takes over up to `limit` records whose owner stopped being alive before `now` and were not settled, and
    /// returns them as they stand once taken (their `through` can no longer move). Records taken before are
    /// returned again, until `settle` says they are done with.
    /// - Throws: `DAOError`.
    public func takeOverExpired(now: Int64, limit: Int = 16) async throws -> [Progress] {
        try await mapErrors {
            let expired = ["until": ["$lt": .int64(now)], "settled": ["$ne": true]] as BSONDocument
            let candidates = try await collection.find(
                expired,
                options: FindOptions(
                    projection: ["_id": 1],
                    limit: Int64(limit)))
            let owners = candidates.compactMap { $0["_id"] }
            guard !owners.isEmpty else { return [] }
            _ = try await collection.updateMany(
                [
                    "_id": ["$in": .array(owners)], "until": ["$lt": .int64(now)],
                    "taken_at": ["$exists": false],
                ],
                ["$set": ["taken_at": .int64(now)]])
            let taken = try await collection.find(["_id": ["$in": .array(owners)], "taken_at": ["$exists": true]])
            return taken.compactMap(Progress.init)
        }
    }

    /// Marks a taken record done with: its messages past `through` are back in the outbox.
    /// - Throws: `DAOError`.
    public func settle(owner: String) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(owner), "taken_at": ["$exists": true]],
                ["$set": ["settled": true]])
        }
    }

    /// The records of `owners`, by owner.
    /// - Throws: `DAOError`.
    public func progress(of owners: Set<String>) async throws -> [String: Progress] {
        guard !owners.isEmpty else { return [:] }
        let documents = try await mapErrors {
            try await collection.find(["_id": ["$in": .array(owners.sorted().map(BSONValue.string))]])
        }
        var byOwner: [String: Progress] = [:]
        for progress in documents.compactMap(Progress.init) { byOwner[progress.owner] = progress }
        return byOwner
    }

    /// Every record (few: one per worker that ever ran).
    /// - Throws: `DAOError`.
    public func all() async throws -> [Progress] {
        try await mapErrors { try await collection.find([:]) }.compactMap(Progress.init)
    }
}

extension RelayProgressDAO {
    /// `messages` with each `.direct` relay state shown as what it comes to for people and API clients: `sent`
    /// (every component with it) once its owner's progress passed the message, else `pending`. The owner's
    /// name and the message's number stay out: they are the relay's bookkeeping.
    /// - Throws: `DAOError`.
    public func resolved(_ messages: [Message]) async throws -> [Message] {
        let owners = Set(messages.compactMap { RelayState(message: $0.document)?.direct?.owner })
        guard !owners.isEmpty else { return messages }
        let progress = try await progress(of: owners)
        return messages.map { message in
            guard let direct = RelayState(message: message.document)?.direct else { return message }
            let sent = progress[direct.owner].map { direct.seq <= $0.through } ?? false
            return Message(document: Self.shown(message.document, sent: sent)) ?? message
        }
    }

    /// `document` with its `relay` shown as `sent` or `pending` in place of `direct` (pending: as any worker
    /// claims it).
    public static func shown(_ document: BSONDocument, sent: Bool) -> BSONDocument {
        BSONDocument(
            document.elements.map { element in
                guard element.key == "relay", let relay = element.value.documentValue else { return element }
                let fields = relay.elements.compactMap { field -> (key: String, value: BSONValue)? in
                    switch field.key {
                    case "lease_owner", "seq": return nil
                    case "state": return (field.key, sent ? "sent" : "pending")
                    case "components" where sent:
                        let components = (field.value.documentValue ?? [:]).elements.map { component in
                            (
                                key: component.key,
                                value: BSONValue.document(
                                    BSONDocument(
                                        (component.value.documentValue ?? [:]).elements.map {
                                            $0.key == "state" ? (key: "state", value: "sent") : $0
                                        }))
                            )
                        }
                        return (field.key, .document(BSONDocument(components)))
                    default: return field
                    }
                }
                return (element.key, .document(BSONDocument(fields)))
            })
    }
}

import Mongo

/// The append-only `audit` collection: the head of the chain, inserts that a unique `seq` keeps in one chain across
/// replicas, pages in `seq` order for verification and export, and filtered pages for the portal.
public struct AuditDAO: Sendable {
    let collection: MongoCollection

    /// `seq` is unique: two replicas appending the same place in the chain cannot both succeed.
    static let indexes = [
        IndexModel(keys: ["seq": 1], name: "seq", unique: true),
        IndexModel(keys: ["at": 1], name: "at"),
        // A person's entries, for their export.
        IndexModel(keys: ["subjects.id": 1], name: "subjects_id"),
    ]

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.audit)
    }

    /// The entry with the highest `seq`, or nil when the log is empty.
    /// - Throws: `DAOError`.
    public func head() async throws -> AuditEntry? {
        try await mapErrors {
            try await collection.find([:], options: FindOptions(sort: ["seq": -1], limit: 1))
                .first.flatMap(AuditEntry.init(document:))
        }
    }

    /// The entry with the highest `seq` above `seq`, or nil when there is none: the head as it moved on from one
    /// known, reading only the entries after it (a store without limit push-down reads a whole index range for a
    /// sorted page, so `head()` costs the length of the log).
    /// - Throws: `DAOError`.
    public func head(after seq: Int64) async throws -> AuditEntry? {
        try await mapErrors {
            try await collection.find(["seq": ["$gt": .int64(seq)]], options: FindOptions(sort: ["seq": -1], limit: 1))
                .first.flatMap(AuditEntry.init(document:))
        }
    }

    /// Stores `entries` (hashed, in `seq` order) as the next of the chain, in order, in one command; it stops at the
    /// first that another append took the place of (see `hashes(from:through:)` for which were stored).
    /// - Throws: `DAOError` `.duplicate` when another append took a `seq` first; other `DAOError`s.
    public func insert(_ entries: [AuditEntry]) async throws {
        guard !entries.isEmpty else { return }
        _ = try await mapErrors { try await collection.insertMany(entries.map(\.document), ordered: true) }
    }

    /// The hashes of the entries stored with `seq` from `first` through `last`, by `seq`: which of a batch landed.
    /// - Throws: `DAOError`.
    public func hashes(from first: Int64, through last: Int64) async throws -> [Int64: String] {
        let documents = try await mapErrors {
            try await collection.find(
                ["seq": ["$gte": .int64(first), "$lte": .int64(last)]],
                options: FindOptions(projection: ["seq": 1, "hash": 1]))
        }
        var hashes: [Int64: String] = [:]
        for document in documents {
            if let seq = document["seq"]?.int64Value, let hash = document["hash"]?.stringValue { hashes[seq] = hash }
        }
        return hashes
    }

    /// Stores `entry` (hashed) as the next of the chain.
    /// - Throws: `DAOError` `.duplicate` when another append took its `seq` first; other `DAOError`s.
    public func insert(_ entry: AuditEntry) async throws {
        _ = try await mapErrors { try await collection.insertOne(entry.document) }
    }

    /// Up to `limit` entries with `seq` above `after`, in `seq` order (documents without an integer `seq` are skipped,
    /// which a verifier sees as a gap).
    /// - Throws: `DAOError`.
    public func page(after: Int64, limit: Int) async throws -> [AuditEntry] {
        try await mapErrors {
            try await collection.find(
                ["seq": ["$gt": .int64(after)]],
                options: FindOptions(sort: ["seq": 1], limit: Int64(limit))
            )
            .compactMap(AuditEntry.init(document:))
        }
    }

    /// The `seq` just before the first entry recorded at or after `at` (Unix ms), for an export from that time.
    /// - Throws: `DAOError`.
    public func seqBefore(at: Int64) async throws -> Int64 {
        try await mapErrors {
            let first = try await collection.find(
                ["at": ["$gte": .int64(at)]],
                options: FindOptions(sort: ["seq": 1], limit: 1)
            ).first
            if let seq = first?["seq"]?.int64Value { return seq - 1 }
            return Int64.max
        }
    }

    /// Up to `limit` entries matching `filter`, newest first, with `seq` below `before` when given.
    /// - Throws: `DAOError`.
    public func list(_ filter: AuditFilter, before: Int64?, limit: Int) async throws -> [AuditEntry] {
        var query = filter.query
        if let before { query = BSONDocument(query.elements + [(key: "seq", value: ["$lt": .int64(before)])]) }
        let matching = query
        return try await mapErrors {
            try await collection.find(matching, options: FindOptions(sort: ["seq": -1], limit: Int64(limit)))
                .compactMap(AuditEntry.init(document:))
        }
    }
}

/// What the portal's audit page narrows the log to; every field optional.
public struct AuditFilter: Sendable, Equatable {
    /// The actor's name, exactly.
    public var actor: String?
    /// The start of the action's dotted name (`message.` for every message action).
    public var actionPrefix: String?
    /// The target's id, exactly.
    public var target: String?
    /// Recorded at or after this time (Unix ms).
    public var since: Int64?
    /// The pseudonyms the actor's name may stand under (`AuditLog` fills them).
    public var actorPseudonyms: [String] = []
    /// The pseudonyms the target's id may stand under (`AuditLog` fills them).
    public var targetPseudonyms: [String] = []
    /// The pseudonym of the person the target's id may be: an entry naming them anywhere (a group's new member, a
    /// message's persons) is found too.
    public var targetPersonPseudonym: String?

    public init(actor: String? = nil, actionPrefix: String? = nil, target: String? = nil, since: Int64? = nil) {
        self.actor = actor
        self.actionPrefix = actionPrefix
        self.target = target
        self.since = since
    }

    /// The query: exact matches (of the name or one of its pseudonyms), an anchored and escaped prefix for the action.
    var query: BSONDocument {
        var fields: [(key: String, value: BSONValue)] = []
        func named(_ name: String, or pseudonyms: [String]) -> BSONValue {
            pseudonyms.isEmpty ? .string(name) : ["$in": .array(([name] + pseudonyms).map(BSONValue.string))]
        }
        if let actor { fields.append((key: "actor.name", value: named(actor, or: actorPseudonyms))) }
        if let actionPrefix, !actionPrefix.isEmpty {
            fields.append((key: "action", value: .regex(BSONRegex(pattern: "^" + Self.escaped(actionPrefix)))))
        }
        if let target {
            if let person = targetPersonPseudonym {
                fields.append(
                    (
                        key: "$or",
                        value: [["target.id": named(target, or: targetPseudonyms)], ["subjects.id": .string(person)]]
                    ))
            } else {
                fields.append((key: "target.id", value: named(target, or: targetPseudonyms)))
            }
        }
        if let since { fields.append((key: "at", value: ["$gte": .int64(since)])) }
        return BSONDocument(fields)
    }

    /// `text` with every regular-expression metacharacter escaped.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if "\\^$.|?*+()[]{}".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}

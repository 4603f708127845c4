import CMongo

/// An index to create: its keys and options.
public struct IndexModel: Sendable {
    /// The indexed fields and directions (`["topic_key": 1, "timestamp": -1]`).
    public var keys: BSONDocument
    /// The index's name; stable names make creation idempotent.
    public var name: String
    /// Refuse a second document with the same keys.
    public var unique: Bool
    /// For a TTL index: seconds after the indexed date at which a document is deleted.
    public var expireAfterSeconds: Int32?
    /// Index only documents matching this filter.
    public var partialFilter: BSONDocument?

    public init(
        keys: BSONDocument, name: String, unique: Bool = false, expireAfterSeconds: Int32? = nil,
        partialFilter: BSONDocument? = nil
    ) {
        self.keys = keys
        self.name = name
        self.unique = unique
        self.expireAfterSeconds = expireAfterSeconds
        self.partialFilter = partialFilter
    }

    var document: BSONDocument {
        var spec: [(key: String, value: BSONValue)] = [("key", .document(keys)), ("name", .string(name))]
        if unique { spec.append(("unique", true)) }
        if let expireAfterSeconds { spec.append(("expireAfterSeconds", .int32(expireAfterSeconds))) }
        if let partialFilter { spec.append(("partialFilterExpression", .document(partialFilter))) }
        return BSONDocument(spec)
    }
}

extension MongoCollection {
    /// Creates the indexes; creating one that already exists with the same spec does nothing.
    /// - Throws: the mapped `MongoError` (for instance when a same-named index differs).
    public func createIndexes(_ indexes: [IndexModel]) async throws {
        let command: BSONDocument = [
            "createIndexes": .string(name),
            "indexes": .array(indexes.map { .document($0.document) }),
        ]
        let databaseName = self.databaseName
        _ = try await pool.withClient { client in
            try command.withBSONPointer { command in
                try BSONPointers.reply { reply, error in
                    mongoc_client_write_command_with_opts(client, databaseName, command, nil, reply, error)
                }
            }
        }
    }

    /// The names of the collection's indexes (none for a collection that does not exist). One command: the first
    /// batch of `listIndexes`, which holds up to 101 indexes (a collection has at most 64).
    /// - Throws: the mapped `MongoError`.
    public func indexNames() async throws -> Set<String> {
        do {
            let listed = try await MongoDatabase(pool: pool, name: databaseName).runCommand([
                "listIndexes": .string(self.name)
            ])
            return Set(
                (listed[path: "cursor.firstBatch"]?.arrayValue ?? []).compactMap {
                    $0.documentValue?["name"]?.stringValue
                })
        } catch let error as MongoError where error.serverCode == 26 {
            return []  // NamespaceNotFound
        }
    }

    /// Drops the index called `name`; dropping one that does not exist (or a collection that does not) is not an
    /// error.
    /// - Throws: the mapped `MongoError`.
    public func dropIndex(named name: String) async throws {
        do {
            _ = try await MongoDatabase(pool: pool, name: databaseName).runCommand([
                "dropIndexes": .string(self.name),
                "index": .string(name),
            ])
        } catch let error as MongoError where error.serverCode == 27 || error.serverCode == 26 {
            return  // IndexNotFound, NamespaceNotFound
        }
    }

    /// Drops the collection; dropping one that does not exist is not an error.
    /// - Throws: the mapped `MongoError`.
    public func drop() async throws {
        do {
            _ = try await MongoDatabase(pool: pool, name: databaseName).runCommand(["drop": .string(name)])
        } catch let error as MongoError where error.serverCode == 26 {
            return  // NamespaceNotFound
        }
    }
}

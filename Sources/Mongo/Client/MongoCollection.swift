import CMongo

/// A collection: every operation is `async` and runs its blocking libmongoc call on the pool's threads.
public struct MongoCollection: Sendable {
    /// The pool whose clients run this collection's operations.
    public let pool: MongoClientPool
    /// The database the collection is in.
    public let databaseName: String
    /// The collection's name.
    public let name: String

    /// Runs `body` with a `mongoc_collection_t` of a leased client, destroyed when `body` returns.
    func withCollection<T: Sendable>(_ body: @escaping @Sendable (OpaquePointer) throws -> T) async throws -> T {
        let databaseName = self.databaseName
        let name = self.name
        return try await pool.withClient { client in
            guard let collection = mongoc_client_get_collection(client, databaseName, name) else {
                throw MongoError(.invalidArgument, "cannot open collection \(name)")
            }
            defer { mongoc_collection_destroy(collection) }
            return try body(collection)
        }
    }
}

/// What `find` returns and in which order.
public struct FindOptions: Sendable {
    /// Which fields to return (`["name": 1]`), or nil for all.
    public var projection: BSONDocument?
    /// The order (`["timestamp": -1]`), or nil for the server's.
    public var sort: BSONDocument?
    /// How many matches to skip.
    public var skip: Int64?
    /// How many documents to return at most.
    public var limit: Int64?
    /// How many documents the server sends per round trip.
    public var batchSize: Int32?

    public init(
        projection: BSONDocument? = nil, sort: BSONDocument? = nil, skip: Int64? = nil,
        limit: Int64? = nil, batchSize: Int32? = nil
    ) {
        self.projection = projection
        self.sort = sort
        self.skip = skip
        self.limit = limit
        self.batchSize = batchSize
    }

    var document: BSONDocument {
        var options: [(key: String, value: BSONValue)] = []
        if let projection { options.append(("projection", .document(projection))) }
        if let sort { options.append(("sort", .document(sort))) }
        if let skip { options.append(("skip", .int64(skip))) }
        if let limit { options.append(("limit", .int64(limit))) }
        if let batchSize { options.append(("batchSize", .int32(batchSize))) }
        return BSONDocument(options)
    }
}

extension MongoCollection {
    /// The documents matching `filter`, read to the end of the cursor.
    /// - Throws: the mapped `MongoError`.
    public func find(_ filter: BSONDocument = [:], options: FindOptions = FindOptions()) async throws -> [BSONDocument]
    {
        let opts = options.document
        return try await withCollection { collection in
            try BSONPointers.with(filter, opts) { filter, opts in
                let cursor = mongoc_collection_find_with_opts(collection, filter, opts, nil)
                return try MongoCursor.drain(cursor)
            }
        }
    }

    /// The first document matching `filter` in `sort` order, or nil.
    /// - Throws: the mapped `MongoError`.
    public func findOne(
        _ filter: BSONDocument, projection: BSONDocument? = nil,
        sort: BSONDocument? = nil
    ) async throws -> BSONDocument? {
        try await find(filter, options: FindOptions(projection: projection, sort: sort, limit: 1)).first
    }

    /// How many documents match `filter`.
    /// - Throws: the mapped `MongoError`.
    public func countDocuments(_ filter: BSONDocument = [:]) async throws -> Int64 {
        try await withCollection { collection in
            try filter.withBSONPointer { filter in
                var count: Int64 = -1
                _ = try BSONPointers.reply { reply, error in
                    count = mongoc_collection_count_documents(collection, filter, nil, nil, reply, error)
                    return count >= 0
                }
                return count
            }
        }
    }

    /// The documents an aggregation pipeline produces.
    /// - Throws: the mapped `MongoError`.
    public func aggregate(_ pipeline: [BSONDocument]) async throws -> [BSONDocument] {
        let command: BSONDocument = ["pipeline": .array(pipeline.map(BSONValue.document))]
        return try await withCollection { collection in
            try command.withBSONPointer { command in
                let cursor = mongoc_collection_aggregate(collection, MONGOC_QUERY_NONE, command, nil, nil)
                return try MongoCursor.drain(cursor)
            }
        }
    }
}

/// Reading a libmongoc cursor to its end, destroying it on every path.
enum MongoCursor {
    static func drain(_ cursor: OpaquePointer?) throws -> [BSONDocument] {
        guard let cursor else { throw MongoError(.invalidArgument, "libmongoc returned no cursor") }
        defer { mongoc_cursor_destroy(cursor) }
        var documents: [BSONDocument] = []
        var current: OpaquePointer?
        while mongoc_cursor_next(cursor, &current) {
            if let current { documents.append(BSONDocument(copying: current)) }
        }
        var error = bson_error_t()
        if mongoc_cursor_error(cursor, &error) { throw MongoError(error) }
        return documents
    }
}

import CMongo

/// What an update did.
public struct UpdateResult: Sendable, Equatable {
    /// Documents the filter matched.
    public var matchedCount: Int64
    /// Documents actually changed.
    public var modifiedCount: Int64
    /// The `_id` of a document an upsert inserted, if it did.
    public var upsertedID: BSONValue?
}

/// How an update applies.
public struct UpdateOptions: Sendable {
    /// Filters naming the `$[identifier]`s of the update's paths.
    public var arrayFilters: [BSONDocument]?
    /// Insert a document when none matches.
    public var upsert: Bool

    public init(arrayFilters: [BSONDocument]? = nil, upsert: Bool = false) {
        self.arrayFilters = arrayFilters
        self.upsert = upsert
    }

    var document: BSONDocument {
        var options: [(key: String, value: BSONValue)] = []
        if let arrayFilters { options.append(("arrayFilters", .array(arrayFilters.map(BSONValue.document)))) }
        if upsert { options.append(("upsert", true)) }
        return BSONDocument(options)
    }
}

/// What `findOneAndUpdate` returns and how it applies.
public struct FindOneAndUpdateOptions: Sendable {
    /// Return the document after the update (true) or before it (false).
    public var returnNew: Bool
    /// Insert a document when none matches.
    public var upsert: Bool
    /// Which document to take when several match.
    public var sort: BSONDocument?
    /// Which fields to return.
    public var projection: BSONDocument?
    /// Filters naming the `$[identifier]`s of the update's paths.
    public var arrayFilters: [BSONDocument]?

    public init(
        returnNew: Bool = true, upsert: Bool = false, sort: BSONDocument? = nil,
        projection: BSONDocument? = nil, arrayFilters: [BSONDocument]? = nil
    ) {
        self.returnNew = returnNew
        self.upsert = upsert
        self.sort = sort
        self.projection = projection
        self.arrayFilters = arrayFilters
    }
}

extension MongoCollection {
    /// Inserts `document`, giving it a new ObjectId `_id` when it has none, and returns the `_id`.
    /// - Throws: `duplicateKey`, or another mapped `MongoError`.
    @discardableResult
    public func insertOne(_ document: BSONDocument) async throws -> BSONValue {
        let document = document.contains("_id") ? document : document.prepending("_id", .objectID(ObjectID()))
        let id = document["_id"] ?? .null
        _ = try await withCollection { collection in
            try document.withBSONPointer { document in
                try BSONPointers.reply { reply, error in
                    mongoc_collection_insert_one(collection, document, nil, reply, error)
                }
            }
        }
        return id
    }

    /// Inserts `documents` in one command (ordered: stops at the first failure) and returns their `_id`s.
    /// - Throws: `duplicateKey`, or another mapped `MongoError`.
    @discardableResult
    public func insertMany(_ documents: [BSONDocument], ordered: Bool = true) async throws -> [BSONValue] {
        guard !documents.isEmpty else { return [] }
        let documents = documents.map { $0.contains("_id") ? $0 : $0.prepending("_id", .objectID(ObjectID())) }
        let options: BSONDocument = ["ordered": .bool(ordered)]
        _ = try await withCollection { collection in
            // libmongoc wants an array of pointers: heap copies, each destroyed once below.
            let pointers = documents.compactMap { document in
                document.bytes.withUnsafeBufferPointer { bson_new_from_data($0.baseAddress, $0.count) }
            }
            defer { pointers.forEach { bson_destroy($0) } }
            guard pointers.count == documents.count else { throw MongoError(.invalidArgument, "out of memory") }
            var constPointers: [OpaquePointer?] = pointers
            return try options.withBSONPointer { options in
                try BSONPointers.reply { reply, error in
                    mongoc_collection_insert_many(
                        collection, &constPointers, constPointers.count, options, reply, error)
                }
            }
        }
        return documents.map { $0["_id"] ?? .null }
    }

    /// Applies `update` to the first document matching `filter`.
    /// - Throws: the mapped `MongoError`.
    @discardableResult
    public func updateOne(
        _ filter: BSONDocument, _ update: BSONDocument,
        options: UpdateOptions = UpdateOptions()
    ) async throws -> UpdateResult {
        try await performUpdate(filter, update, options: options, many: false)
    }

    /// Applies `update` to every document matching `filter`.
    /// - Throws: the mapped `MongoError`.
    @discardableResult
    public func updateMany(
        _ filter: BSONDocument, _ update: BSONDocument,
        options: UpdateOptions = UpdateOptions()
    ) async throws -> UpdateResult {
        try await performUpdate(filter, update, options: options, many: true)
    }

    private func performUpdate(
        _ filter: BSONDocument, _ update: BSONDocument, options: UpdateOptions,
        many: Bool
    ) async throws -> UpdateResult {
        let opts = options.document
        let reply = try await withCollection { collection in
            try BSONPointers.with(filter, update, opts) { filter, update, opts in
                try BSONPointers.reply { reply, error in
                    many
                        ? mongoc_collection_update_many(collection, filter, update, opts, reply, error)
                        : mongoc_collection_update_one(collection, filter, update, opts, reply, error)
                }
            }
        }
        return UpdateResult(
            matchedCount: reply["matchedCount"]?.int64Value ?? 0,
            modifiedCount: reply["modifiedCount"]?.int64Value ?? 0,
            upsertedID: reply["upsertedId"]
        )
    }

    /// Deletes the first document matching `filter`; returns how many were deleted (0 or 1).
    /// - Throws: the mapped `MongoError`.
    @discardableResult
    public func deleteOne(_ filter: BSONDocument) async throws -> Int64 {
        try await delete(filter, many: false)
    }

    /// Deletes every document matching `filter`; returns how many were deleted.
    /// - Throws: the mapped `MongoError`.
    @discardableResult
    public func deleteMany(_ filter: BSONDocument) async throws -> Int64 {
        try await delete(filter, many: true)
    }

    private func delete(_ filter: BSONDocument, many: Bool) async throws -> Int64 {
        let reply = try await withCollection { collection in
            try filter.withBSONPointer { filter in
                try BSONPointers.reply { reply, error in
                    many
                        ? mongoc_collection_delete_many(collection, filter, nil, reply, error)
                        : mongoc_collection_delete_one(collection, filter, nil, reply, error)
                }
            }
        }
        return reply["deletedCount"]?.int64Value ?? 0
    }

    /// Atomically updates the first document matching `filter` and returns it (after the update
    /// by default), or nil when nothing matched and nothing was upserted.
    /// - Throws: the mapped `MongoError`.
    public func findOneAndUpdate(
        _ filter: BSONDocument, _ update: BSONDocument,
        options: FindOneAndUpdateOptions = FindOneAndUpdateOptions()
    ) async throws -> BSONDocument? {
        let extra: BSONDocument? = options.arrayFilters.map { ["arrayFilters": .array($0.map(BSONValue.document))] }
        let reply = try await withCollection { collection in
            guard let opts = mongoc_find_and_modify_opts_new() else {
                throw MongoError(.invalidArgument, "cannot allocate findAndModify options")
            }
            defer { mongoc_find_and_modify_opts_destroy(opts) }
            var flags = MONGOC_FIND_AND_MODIFY_NONE.rawValue
            if options.returnNew { flags |= MONGOC_FIND_AND_MODIFY_RETURN_NEW.rawValue }
            if options.upsert { flags |= MONGOC_FIND_AND_MODIFY_UPSERT.rawValue }
            mongoc_find_and_modify_opts_set_flags(opts, mongoc_find_and_modify_flags_t(rawValue: flags))
            let configured = BSONPointers.with(update, options.sort, options.projection) { update, sort, projection in
                mongoc_find_and_modify_opts_set_update(opts, update)
                    && (sort.map { mongoc_find_and_modify_opts_set_sort(opts, $0) } ?? true)
                    && (projection.map { mongoc_find_and_modify_opts_set_fields(opts, $0) } ?? true)
            }
            let extraAppended = BSONPointers.with(extra) { extra in
                extra.map { mongoc_find_and_modify_opts_append(opts, $0) } ?? true
            }
            guard configured, extraAppended else {
                throw MongoError(.invalidArgument, "invalid findAndModify options")
            }
            return try filter.withBSONPointer { filter in
                try BSONPointers.reply { reply, error in
                    mongoc_collection_find_and_modify_with_opts(collection, filter, opts, reply, error)
                }
            }
        }
        return reply["value"]?.documentValue
    }
}

import CMongo

extension MongoCollection {
    /// Inserts `documents` in one unordered command and returns the positions of those a unique index refused
    /// (already stored): the caller learns which documents are new from the command's own write errors, without
    /// reading anything back.
    /// - Throws: the mapped `MongoError` when the command failed, or when a document was refused for another reason
    ///   than a duplicate key.
    public func insertManyIgnoringDuplicates(_ documents: [BSONDocument]) async throws -> Set<Int> {
        guard !documents.isEmpty else { return [] }
        let documents = documents.map { $0.contains("_id") ? $0 : $0.prepending("_id", .objectID(ObjectID())) }
        let options: BSONDocument = ["ordered": false]
        let outcome = try await withCollection { collection -> (reply: BSONDocument, error: MongoError?) in
            // libmongoc wants an array of pointers: heap copies, each destroyed once below.
            let pointers = documents.compactMap { document in
                document.bytes.withUnsafeBufferPointer { bson_new_from_data($0.baseAddress, $0.count) }
            }
            defer { pointers.forEach { bson_destroy($0) } }
            guard pointers.count == documents.count else { throw MongoError(.invalidArgument, "out of memory") }
            var constPointers: [OpaquePointer?] = pointers
            return options.withBSONPointer { options in
                CStorage.withBSON { reply in
                    bson_init(reply)
                    defer { bson_destroy(reply) }
                    var error = bson_error_t()
                    // The reply holds `writeErrors` (with each refused document's index) even when the call fails.
                    let succeeded = mongoc_collection_insert_many(
                        collection, &constPointers, constPointers.count,
                        options, reply, &error)
                    return (BSONDocument(copying: reply), succeeded ? nil : MongoError(error))
                }
            }
        }
        guard let error = outcome.error else { return [] }
        let writeErrors = outcome.reply["writeErrors"]?.arrayValue ?? []
        // A failure without write errors (the command itself failed), or with a write concern error, is the caller's.
        guard !writeErrors.isEmpty, outcome.reply["writeConcernErrors"]?.arrayValue?.isEmpty ?? true else {
            throw error
        }
        var refused: Set<Int> = []
        for case .document(let writeError) in writeErrors {
            let code = writeError["code"]?.int64Value ?? 0
            guard [11000, 11001, 12582].contains(code), let index = writeError["index"]?.int64Value else { throw error }
            refused.insert(Int(index))
        }
        return refused
    }
}

import CMongo

/// Scoped C views of documents and reply buffers, so no `bson_t` outlives the call that needs it.
enum BSONPointers {
    /// Calls `body` with a pointer to `document`, or nil when there is none.
    static func with<T>(_ document: BSONDocument?, _ body: (OpaquePointer?) throws -> T) rethrows -> T {
        guard let document else { return try body(nil) }
        return try document.withBSONPointer { try body($0) }
    }

    /// Calls `body` with pointers to two optional documents.
    static func with<T>(
        _ first: BSONDocument?, _ second: BSONDocument?,
        _ body: (OpaquePointer?, OpaquePointer?) throws -> T
    ) rethrows -> T {
        try with(first) { first in try with(second) { second in try body(first, second) } }
    }

    /// Calls `body` with pointers to three optional documents.
    static func with<T>(
        _ first: BSONDocument?, _ second: BSONDocument?, _ third: BSONDocument?,
        _ body: (OpaquePointer?, OpaquePointer?, OpaquePointer?) throws -> T
    ) rethrows -> T {
        try with(first, second) { first, second in try with(third) { third in try body(first, second, third) } }
    }

    /// Runs a libmongoc call that fills a reply and an error, and returns the reply.
    ///
    /// The reply is initialised before the call and destroyed after it on every path.
    /// - Throws: the mapped `MongoError` when the call returns false.
    static func reply(
        _ call: (OpaquePointer, UnsafeMutablePointer<bson_error_t>) -> Bool
    ) throws -> BSONDocument {
        try CStorage.withBSON { reply in
            bson_init(reply)
            defer { bson_destroy(reply) }
            var error = bson_error_t()
            let succeeded = call(reply, &error)
            guard succeeded else { throw MongoError(error) }
            return BSONDocument(copying: reply)
        }
    }
}

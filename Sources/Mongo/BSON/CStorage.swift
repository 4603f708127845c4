import CMongo

/// Stack storage for libbson's over-aligned structs, which Swift imports only as opaque pointers.
enum CStorage {
    private static let bsonSize = cmongo_bson_size()
    private static let iterSize = cmongo_bson_iter_size()
    private static let alignment = cmongo_bson_alignment()

    /// Calls `body` with uninitialised storage for one `bson_t`, valid only inside `body`.
    static func withBSON<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(byteCount: bsonSize, alignment: alignment) { raw in
            try body(OpaquePointer(raw.baseAddress!))
        }
    }

    /// Calls `body` with uninitialised storage for one `bson_iter_t`, valid only inside `body`.
    static func withIterator<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(byteCount: iterSize, alignment: alignment) { raw in
            try body(OpaquePointer(raw.baseAddress!))
        }
    }
}

import CMongo

/// The two spellings of MongoDB Extended JSON v2 that libbson writes.
public enum ExtendedJSONMode: Sendable {
    /// Every type explicit (`{"$numberInt": "1"}`): lossless.
    case canonical
    /// Numbers and dates in their natural JSON form where that loses nothing of importance.
    case relaxed
}

extension BSONDocument {
    /// A document from MongoDB Extended JSON: v2 canonical or relaxed, or the legacy
    /// `mongoexport` forms (`{"$oid": ...}`, `{"$date": ...}`, `{"$numberLong": ...}`).
    /// - Throws: `invalidJSON` naming libbson's complaint.
    public init(extendedJSON text: String) throws {
        _ = MongoLibrary.initialized
        var error = bson_error_t()
        let utf8 = Array(text.utf8)
        let bson = utf8.withUnsafeBufferPointer { bson_new_from_json($0.baseAddress, $0.count, &error) }
        guard let bson else {
            throw MongoError(.invalidJSON, MongoError(error).message)
        }
        defer { bson_destroy(bson) }
        self.init(copying: bson)
    }

    /// This document as Extended JSON v2.
    public func extendedJSON(_ mode: ExtendedJSONMode = .canonical) -> String {
        withBSONPointer { bson in
            var length = 0
            let chars =
                switch mode {
                case .canonical: bson_as_canonical_extended_json(bson, &length)
                case .relaxed: bson_as_relaxed_extended_json(bson, &length)
                }
            guard let chars else { return "{}" }
            defer { bson_free(chars) }
            return String(cString: chars)
        }
    }
}

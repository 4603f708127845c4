import CMongo

/// Builds documents through libbson's `bson_append_*`, so every document we make is libbson's own.
enum BSONWriter {
    /// A document of these elements.
    /// - Throws: `invalidArgument` for a key with NUL or a document over libbson's size limit.
    static func document(_ elements: some Sequence<(key: String, value: BSONValue)>) throws -> BSONDocument {
        _ = MongoLibrary.initialized
        guard let bson = bson_new() else { throw MongoError(.invalidArgument, "out of memory") }
        defer { bson_destroy(bson) }
        for element in elements {
            try append(element.value, key: element.key, to: bson)
        }
        return BSONDocument(copying: bson)
    }

    private static func append(_ value: BSONValue, key: String, to bson: OpaquePointer) throws {
        guard !key.utf8.contains(0) else { throw MongoError(.forbiddenKey, "a key contains NUL") }
        let appended: Bool = key.withCString { key in
            switch value {
            case .double(let double):
                return bson_append_double(bson, key, -1, double)
            case .string(let string):
                return appendString(string) { bson_append_utf8(bson, key, -1, $0, $1) }
            case .document(let document):
                return document.withBSONPointer { bson_append_document(bson, key, -1, $0) }
            case .array(let array):
                return appendArray(array, key: key, to: bson)
            case .binary(let binary):
                // A zero-length buffer may have no address; libbson wants one, so pad the empty case.
                let data = binary.data.isEmpty ? [0] : binary.data
                return data.withUnsafeBufferPointer {
                    bson_append_binary(
                        bson, key, -1, bson_subtype_t(rawValue: UInt32(binary.subtype)),
                        $0.baseAddress, UInt32(binary.data.count))
                }
            case .undefined:
                return bson_append_undefined(bson, key, -1)
            case .objectID(let id):
                var oid = id.cValue
                return bson_append_oid(bson, key, -1, &oid)
            case .bool(let bool):
                return bson_append_bool(bson, key, -1, bool)
            case .datetime(let milliseconds):
                return bson_append_date_time(bson, key, -1, milliseconds)
            case .null:
                return bson_append_null(bson, key, -1)
            case .regex(let regex):
                return bson_append_regex_w_len(
                    bson, key, -1, regex.pattern, Int32(regex.pattern.utf8.count),
                    regex.options)
            case .dbPointer(let collection, let id):
                var oid = id.cValue
                return bson_append_dbpointer(bson, key, -1, collection, &oid)
            case .javascript(let code):
                return bson_append_code(bson, key, -1, code)
            case .symbol(let symbol):
                return appendString(symbol) { bson_append_symbol(bson, key, -1, $0, $1) }
            case .javascriptWithScope(let code, let scope):
                return scope.withBSONPointer { bson_append_code_with_scope(bson, key, -1, code, $0) }
            case .int32(let int):
                return bson_append_int32(bson, key, -1, int)
            case .timestamp(let timestamp):
                return bson_append_timestamp(bson, key, -1, timestamp.seconds, timestamp.increment)
            case .int64(let int):
                return bson_append_int64(bson, key, -1, int)
            case .decimal128(let decimal):
                var value = bson_decimal128_t(low: decimal.low, high: decimal.high)
                return bson_append_decimal128(bson, key, -1, &value)
            case .minKey:
                return bson_append_minkey(bson, key, -1)
            case .maxKey:
                return bson_append_maxkey(bson, key, -1)
            }
        }
        guard appended else { throw MongoError(.invalidArgument, "document too large or value not encodable") }
    }

    private static func appendString(_ string: String, _ body: (UnsafePointer<CChar>, Int32) -> Bool) -> Bool {
        // The length travels with the pointer: strings may hold NUL, which BSON strings allow.
        let utf8 = Array(string.utf8) + [0]
        return utf8.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!, Int32(buffer.count - 1)) }
        }
    }

    private static func appendArray(
        _ array: [BSONValue], key: UnsafePointer<CChar>,
        to bson: OpaquePointer
    ) -> Bool {
        CStorage.withBSON { child in
            // The child shares the parent's buffer until `end`; the parent's destroy frees both.
            guard bson_append_array_begin(bson, key, -1, child) else { return false }
            for (index, element) in array.enumerated() {
                do { try append(element, key: String(index), to: child) } catch { return false }
            }
            return bson_append_array_end(bson, child)
        }
    }
}

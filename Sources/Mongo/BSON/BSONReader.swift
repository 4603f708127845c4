import CMongo

/// Reads documents through libbson's `bson_iter_t`; the bytes were validated when the document was made.
enum BSONReader {
    /// All top-level elements of `document`, in order.
    static func elements(of document: BSONDocument) -> [(key: String, value: BSONValue)] {
        document.withBSONPointer { bson in
            CStorage.withIterator { iter in
                guard bson_iter_init(iter, bson) else { return [] }
                var elements: [(key: String, value: BSONValue)] = []
                while bson_iter_next(iter) {
                    elements.append((key: String(cString: bson_iter_key(iter)), value: value(at: iter)))
                }
                return elements
            }
        }
    }

    /// The value of a top-level `key`, or nil.
    static func value(of key: String, in document: BSONDocument) -> BSONValue? {
        document.withBSONPointer { bson in
            CStorage.withIterator { iter in
                guard bson_iter_init(iter, bson) else { return nil }
                while bson_iter_next(iter) {
                    if strcmp(bson_iter_key(iter), key) == 0 { return value(at: iter) }
                }
                return nil
            }
        }
    }

    /// The array elements of an iterator positioned on an array.
    private static func array(at iter: OpaquePointer) -> [BSONValue] {
        CStorage.withIterator { child in
            guard bson_iter_recurse(iter, child) else { return [] }
            var values: [BSONValue] = []
            while bson_iter_next(child) {
                values.append(value(at: child))
            }
            return values
        }
    }

    /// The value the iterator is positioned on.
    static func value(at iter: OpaquePointer) -> BSONValue {
        switch cmongo_iter_type(iter) {
        case BSON_TYPE_DOUBLE:
            return .double(bson_iter_double(iter))
        case BSON_TYPE_UTF8:
            var length: UInt32 = 0
            let chars = bson_iter_utf8(iter, &length)
            return .string(string(chars, length))
        case BSON_TYPE_DOCUMENT:
            return .document(subdocument(iter))
        case BSON_TYPE_ARRAY:
            return .array(array(at: iter))
        case BSON_TYPE_BINARY:
            var subtype = bson_subtype_t(rawValue: 0)
            var length: UInt32 = 0
            var data: UnsafePointer<UInt8>?
            bson_iter_binary(iter, &subtype, &length, &data)
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
            return .binary(BSONBinary(subtype: UInt8(truncatingIfNeeded: subtype.rawValue), data: bytes))
        case BSON_TYPE_UNDEFINED:
            return .undefined
        case BSON_TYPE_OID:
            return .objectID(ObjectID(bson_iter_oid(iter).pointee))
        case BSON_TYPE_BOOL:
            return .bool(bson_iter_bool(iter))
        case BSON_TYPE_DATE_TIME:
            return .datetime(bson_iter_date_time(iter))
        case BSON_TYPE_NULL:
            return .null
        case BSON_TYPE_REGEX:
            var options: UnsafePointer<CChar>?
            let pattern = bson_iter_regex(iter, &options)
            return .regex(
                BSONRegex(
                    pattern: pattern.map { String(cString: $0) } ?? "",
                    options: options.map { String(cString: $0) } ?? ""))
        case BSON_TYPE_DBPOINTER:
            var length: UInt32 = 0
            var collection: UnsafePointer<CChar>?
            var oid: UnsafePointer<bson_oid_t>?
            bson_iter_dbpointer(iter, &length, &collection, &oid)
            let id = oid.map { ObjectID($0.pointee) } ?? ObjectID(bson_oid_t())
            return .dbPointer(collection: string(collection, length), id: id)
        case BSON_TYPE_CODE:
            var length: UInt32 = 0
            let code = bson_iter_code(iter, &length)
            return .javascript(string(code, length))
        case BSON_TYPE_SYMBOL:
            var length: UInt32 = 0
            let symbol = bson_iter_symbol(iter, &length)
            return .symbol(string(symbol, length))
        case BSON_TYPE_CODEWSCOPE:
            var length: UInt32 = 0
            var scopeLength: UInt32 = 0
            var scopeData: UnsafePointer<UInt8>?
            let code = bson_iter_codewscope(iter, &length, &scopeLength, &scopeData)
            let scope = scopeData.map {
                BSONDocument(trustedBytes: Array(UnsafeBufferPointer(start: $0, count: Int(scopeLength))))
            }
            return .javascriptWithScope(code: string(code, length), scope: scope ?? BSONDocument())
        case BSON_TYPE_INT32:
            return .int32(bson_iter_int32(iter))
        case BSON_TYPE_TIMESTAMP:
            var seconds: UInt32 = 0
            var increment: UInt32 = 0
            bson_iter_timestamp(iter, &seconds, &increment)
            return .timestamp(BSONTimestamp(seconds: seconds, increment: increment))
        case BSON_TYPE_INT64:
            return .int64(bson_iter_int64(iter))
        case BSON_TYPE_DECIMAL128:
            var decimal = bson_decimal128_t()
            bson_iter_decimal128(iter, &decimal)
            return .decimal128(BSONDecimal128(high: decimal.high, low: decimal.low))
        case BSON_TYPE_MINKEY:
            return .minKey
        case BSON_TYPE_MAXKEY:
            return .maxKey
        default:
            // Validation refuses unknown type bytes, so this is unreachable for a BSONDocument.
            return .undefined
        }
    }

    private static func subdocument(_ iter: OpaquePointer) -> BSONDocument {
        var length: UInt32 = 0
        var data: UnsafePointer<UInt8>?
        bson_iter_document(iter, &length, &data)
        guard let data else { return BSONDocument() }
        return BSONDocument(trustedBytes: Array(UnsafeBufferPointer(start: data, count: Int(length))))
    }

    private static func string(_ chars: UnsafePointer<CChar>?, _ length: UInt32) -> String {
        guard let chars else { return "" }
        return chars.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self)
        }
    }
}

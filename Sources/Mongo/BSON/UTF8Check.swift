import CMongo

/// Strict UTF-8 checking of every key and string in a document, nested ones included.
enum UTF8Check {
    /// True when every key and every string, symbol and code value is valid UTF-8.
    static func isValid(document bson: OpaquePointer) -> Bool {
        CStorage.withIterator { iter in
            bson_iter_init(iter, bson) && isValid(iterating: iter)
        }
    }

    private static func isValid(iterating iter: OpaquePointer) -> Bool {
        while bson_iter_next(iter) {
            guard let key = bson_iter_key(iter), valid(key, Int(strlen(key))) else { return false }
            var length: UInt32 = 0
            switch cmongo_iter_type(iter) {
            case BSON_TYPE_UTF8:
                guard valid(bson_iter_utf8(iter, &length), Int(length)) else { return false }
            case BSON_TYPE_SYMBOL:
                guard valid(bson_iter_symbol(iter, &length), Int(length)) else { return false }
            case BSON_TYPE_CODE:
                guard valid(bson_iter_code(iter, &length), Int(length)) else { return false }
            case BSON_TYPE_DOCUMENT, BSON_TYPE_ARRAY:
                let nestedValid = CStorage.withIterator { child in
                    bson_iter_recurse(iter, child) && isValid(iterating: child)
                }
                guard nestedValid else { return false }
            default:
                continue
            }
        }
        return true
    }

    private static func valid(_ chars: UnsafePointer<CChar>?, _ length: Int) -> Bool {
        guard let chars else { return length == 0 }
        return chars.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(validating: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) != nil
        }
    }
}

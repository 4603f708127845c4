import Mongo

/// The smallest range of string keys that holds a set of them, in the database's order (the bytes of their UTF-8,
/// which is how MongoDB and the embedded database compare strings): one range read of an index serves a batch of
/// neighbours (a roster's persons) where an `$in` list would cost the embedded database a comparison per pair.
/// The caller leaves out the keys found in the range it did not ask for.
enum KeyRange {
    /// `{"$gte": least, "$lte": greatest}` of `keys`; nil for none.
    static func bounds(of keys: some Sequence<String>) -> BSONValue? {
        let bytes = keys.map { Array($0.utf8) }
        guard let least = bytes.min(by: { $0.lexicographicallyPrecedes($1) }),
            let greatest = bytes.max(by: { $0.lexicographicallyPrecedes($1) })
        else { return nil }
        return [
            "$gte": .string(String(decoding: least, as: UTF8.self)),
            "$lte": .string(String(decoding: greatest, as: UTF8.self)),
        ]
    }
}

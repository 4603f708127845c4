import Mongo

/// Lenient readers for fields of stored documents: the legacy hub's data is not always tidy,
/// so a missing or mistyped field reads as empty rather than failing the whole read.
extension BSONDocument {
    func string(_ key: String) -> String { self[key]?.stringValue ?? "" }

    func strings(_ key: String) -> [String] { self[key]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    func documents(_ key: String) -> [BSONDocument] { self[key]?.arrayValue?.compactMap(\.documentValue) ?? [] }

    func objectID(_ key: String) -> ObjectID? { self[key]?.objectIDValue }
}

extension Array where Element == String {
    /// The strings as a BSON array.
    var bson: BSONValue { .array(map(BSONValue.string)) }
}

import Mongo

/// The one canonical encoding of an audit entry, which its SHA-256 `hash` is computed over.
///
/// The encoding is BSON (the bytes MongoDB stores, libbson's layout) of the entry's fields other than `_id` and
/// `hash`, with the keys of every document, at every depth, sorted by their UTF-8 bytes; arrays keep their order,
/// and values keep their BSON types (an Int64 stays an Int64). So the hash does not depend on the order in which a
/// writer or the database put the keys, and any change of a name, a value or a type changes it.
public enum AuditCanonicalEncoding {
    /// The canonical bytes of `document`.
    public static func bytes(of document: BSONDocument) -> [UInt8] {
        sorted(document).bytes
    }

    /// `document` with its keys sorted at every depth.
    static func sorted(_ document: BSONDocument) -> BSONDocument {
        BSONDocument(
            document.elements
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .map { (key: $0.key, value: sorted($0.value)) })
    }

    /// `value` with the keys of the documents in it sorted.
    static func sorted(_ value: BSONValue) -> BSONValue {
        switch value {
        case .document(let document): .document(sorted(document))
        case .array(let values): .array(values.map(sorted))
        case .javascriptWithScope(let code, let scope): .javascriptWithScope(code: code, scope: sorted(scope))
        default: value
        }
    }
}

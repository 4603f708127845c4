import Mongo

/// An `_id` value as a hashable key: ObjectIds by their bytes, anything else by its type and JSON.
struct DocumentKey: Hashable, Sendable {
    private let objectID: ObjectID?
    private let other: String?

    /// The key of an `_id` value.
    init(_ value: BSONValue) {
        if case .objectID(let id) = value {
            objectID = id
            other = nil
        } else {
            objectID = nil
            // The canonical form keeps the type: the int 1 and the string "1" are different ids.
            other = BSONDocument([(key: "", value: value)]).extendedJSON(.canonical)
        }
    }
}

extension BSONValue {
    /// This value as the legacy JSON shows it (an ObjectId as its hex digits), for reports.
    var legacyJSON: String { String(decoding: LegacyJSONWriter().bytes(self), as: UTF8.self) }
}

/// Content equality that ignores the order of keys (the server may move `_id` first) but not types.
enum DocumentContent {
    /// Whether `lhs` and `rhs` hold the same keys with the same values, at every depth.
    static func same(_ lhs: BSONDocument, _ rhs: BSONDocument) -> Bool {
        if lhs == rhs { return true }
        let left = lhs.elements
        let right = rhs.elements
        guard left.count == right.count else { return false }
        var remaining = [String: BSONValue](right.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        for (key, value) in left {
            guard let other = remaining.removeValue(forKey: key), same(value, other) else { return false }
        }
        return remaining.isEmpty
    }

    /// Whether two values are the same, documents compared without regard to key order.
    static func same(_ lhs: BSONValue, _ rhs: BSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.document(let left), .document(let right)):
            return same(left, right)
        case (.array(let left), .array(let right)):
            return left.count == right.count && zip(left, right).allSatisfy { same($0, $1) }
        default:
            return lhs == rhs
        }
    }
}

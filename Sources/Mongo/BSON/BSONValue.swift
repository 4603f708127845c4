/// One BSON value, of any of the types a MongoDB document can hold.
public indirect enum BSONValue: Sendable, Equatable {
    case double(Double)
    case string(String)
    case document(BSONDocument)
    case array([BSONValue])
    case binary(BSONBinary)
    case undefined
    case objectID(ObjectID)
    case bool(Bool)
    /// A UTC datetime, in milliseconds since the Unix epoch.
    case datetime(Int64)
    case null
    case regex(BSONRegex)
    case dbPointer(collection: String, id: ObjectID)
    case javascript(String)
    case symbol(String)
    case javascriptWithScope(code: String, scope: BSONDocument)
    case int32(Int32)
    case timestamp(BSONTimestamp)
    case int64(Int64)
    case decimal128(BSONDecimal128)
    case minKey
    case maxKey
}

/// Binary data with its BSON subtype (0 generic, 4 UUID, ...).
public struct BSONBinary: Sendable, Hashable {
    public var subtype: UInt8
    public var data: [UInt8]
    public init(subtype: UInt8 = 0, data: [UInt8]) {
        self.subtype = subtype
        self.data = data
    }
}

/// A regular expression as MongoDB stores it: a pattern and its option letters.
public struct BSONRegex: Sendable, Hashable {
    public var pattern: String
    public var options: String
    public init(pattern: String, options: String = "") {
        self.pattern = pattern
        self.options = options
    }
}

/// MongoDB's internal timestamp: seconds and an increment within the second.
public struct BSONTimestamp: Sendable, Hashable {
    public var seconds: UInt32
    public var increment: UInt32
    public init(seconds: UInt32, increment: UInt32) {
        self.seconds = seconds
        self.increment = increment
    }
}

/// An IEEE 754-2008 128-bit decimal, kept as its two 64-bit halves.
public struct BSONDecimal128: Sendable, Hashable {
    public var high: UInt64
    public var low: UInt64
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
}

extension BSONValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The document, if this is a document.
    public var documentValue: BSONDocument? {
        if case .document(let value) = self { value } else { nil }
    }

    /// The elements, if this is an array.
    public var arrayValue: [BSONValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// The ObjectId, if this is one.
    public var objectIDValue: ObjectID? {
        if case .objectID(let value) = self { value } else { nil }
    }

    /// The Boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// Any integral number (int32, int64, or a double with no fraction) as an Int64.
    public var int64Value: Int64? {
        switch self {
        case .int32(let value): Int64(value)
        case .int64(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: Int64(value)
        default: nil
        }
    }

    /// Any number as a Double.
    public var doubleValue: Double? {
        switch self {
        case .int32(let value): Double(value)
        case .int64(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// True for BSON null (and the deprecated undefined).
    public var isNull: Bool {
        switch self {
        case .null, .undefined: true
        default: false
        }
    }
}

extension BSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    /// Integer literals become int32 when they fit, as the Node.js driver stores numbers.
    public init(integerLiteral value: Int) { self = BSONValue(integer: Int64(value)) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: BSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, BSONValue)...) {
        self = .document(BSONDocument(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }

    /// An int32 when the integer fits, an int64 otherwise.
    public init(integer value: Int64) {
        if let small = Int32(exactly: value) { self = .int32(small) } else { self = .int64(value) }
    }
}

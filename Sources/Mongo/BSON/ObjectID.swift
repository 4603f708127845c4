import CMongo

/// A MongoDB ObjectId: 12 bytes, written on the wire and in JSON as 24 lowercase hex digits.
public struct ObjectID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 12 bytes, most significant first (ObjectIds sort by these bytes).
    public let bytes: [UInt8]

    /// A new, unique ObjectId (libbson's generator: time, process-unique random, counter).
    public init() {
        _ = MongoLibrary.initialized
        var oid = bson_oid_t()
        bson_oid_init(&oid, nil)
        self.init(oid)
    }

    /// The ObjectId spelled by 24 hex digits (either case), or nil for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 24 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<12 {
            guard let high = Self.nibble(utf8[2 * index]), let low = Self.nibble(utf8[2 * index + 1]) else {
                return nil
            }
            bytes[index] = high << 4 | low
        }
        self.bytes = bytes
    }

    /// The ObjectId of these 12 bytes, or nil when there are not exactly 12.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 12 else { return nil }
        self.bytes = bytes
    }

    /// The first ObjectId that can be made in the second `seconds` (Unix): every id made before that second sorts
    /// below it, every id made in it or later at or above it.
    public init(firstOfSecond seconds: UInt32) {
        self.bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: seconds >> $0) } + Array(repeating: 0, count: 8)
    }

    init(_ oid: bson_oid_t) {
        self.bytes = withUnsafeBytes(of: oid.bytes) { Array($0) }
    }

    /// The 24 lowercase hex digits.
    public var hex: String { Hex.encode(bytes) }

    /// When the ObjectId was made, in seconds since the Unix epoch (its first four bytes).
    public var timestampSeconds: UInt32 {
        bytes[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public var description: String { hex }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    var cValue: bson_oid_t {
        var oid = bson_oid_t()
        withUnsafeMutableBytes(of: &oid.bytes) { raw in raw.copyBytes(from: bytes) }
        return oid
    }

    private static func nibble(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

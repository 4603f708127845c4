/// Parses JSON from a client into BSON, refusing what must never reach the database.
///
/// Keys that start with `$` or contain `.` are refused (they would be operators or paths to MongoDB)
/// unless `refusesOperatorKeys` is off; keys with NUL, a key given twice in one object, and nesting deeper
/// than `maximumDepth` always are. Integers become int32 when they fit, int64 when they do not, doubles otherwise, as the
/// Node.js driver stored them.
public struct JSONParser: Sendable {
    /// How deep objects and arrays may nest.
    public var maximumDepth: Int
    /// Whether `$…` and dotted keys are refused: on for what clients send, off to read back JSON we wrote.
    public var refusesOperatorKeys: Bool

    public init(maximumDepth: Int = 32, refusesOperatorKeys: Bool = true) {
        self.maximumDepth = maximumDepth
        self.refusesOperatorKeys = refusesOperatorKeys
    }

    /// The document a JSON object spells.
    /// - Throws: `JSONParseError`: `malformed` (with the byte offset), `notAnObject`, `forbiddenKey` and
    ///   `duplicateKey` naming the key, `tooDeep`.
    public func document(from bytes: some Collection<UInt8>) throws -> BSONDocument {
        guard case .document(let document) = try value(from: bytes) else {
            throw JSONParseError(.notAnObject, "the JSON text is not an object")
        }
        return document
    }

    /// The value a JSON text spells.
    /// - Throws: as `document(from:)`.
    public func value(from bytes: some Collection<UInt8>) throws -> BSONValue {
        let input = Array(bytes)
        guard String(validating: input, as: UTF8.self) != nil else {
            throw JSONParseError(.malformed, "the JSON text is not valid UTF-8")
        }
        var scanner = Scanner(input: input, maximumDepth: maximumDepth, refusesOperatorKeys: refusesOperatorKeys)
        scanner.skipWhitespace()
        let value = try scanner.parseValue(depth: 0)
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw scanner.error("unexpected text after the JSON value") }
        return value
    }
}

private struct Scanner {
    let input: [UInt8]
    let maximumDepth: Int
    let refusesOperatorKeys: Bool
    var position = 0

    init(input: [UInt8], maximumDepth: Int, refusesOperatorKeys: Bool) {
        self.input = input
        self.maximumDepth = maximumDepth
        self.refusesOperatorKeys = refusesOperatorKeys
    }

    var atEnd: Bool { position >= input.count }

    func error(_ message: String) -> JSONParseError {
        JSONParseError(.malformed, "\(message) at byte \(position)")
    }

    mutating func skipWhitespace() {
        while position < input.count, [0x20, 0x09, 0x0A, 0x0D].contains(input[position]) { position += 1 }
    }

    mutating func parseValue(depth: Int) throws -> BSONValue {
        guard position < input.count else { throw error("unexpected end of JSON") }
        switch input[position] {
        case UInt8(ascii: "{"): return .document(try parseObject(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func expect(_ word: String) throws {
        for byte in word.utf8 {
            guard position < input.count, input[position] == byte else { throw error("invalid literal") }
            position += 1
        }
    }

    private mutating func parseObject(depth: Int) throws -> BSONDocument {
        guard depth <= maximumDepth else {
            throw JSONParseError(.tooDeep, "JSON nests deeper than \(maximumDepth) levels")
        }
        position += 1
        var elements: [(key: String, value: BSONValue)] = []
        var seen: Set<String> = []
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
            return BSONDocument()
        }
        while true {
            skipWhitespace()
            guard position < input.count, input[position] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try parseString()
            try checkKey(key)
            skipWhitespace()
            guard position < input.count, input[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            // A repeated key is refused: JSON.parse would keep the last value, other parsers the first.
            guard seen.insert(key).inserted else {
                throw JSONParseError(.duplicateKey, "the key \"\(key)\" appears twice in one object", key: key)
            }
            elements.append((key: key, value: value))
            skipWhitespace()
            guard position < input.count else { throw error("unexpected end of JSON") }
            if input[position] == UInt8(ascii: ",") { position += 1; continue }
            if input[position] == UInt8(ascii: "}") { position += 1; break }
            throw error("expected ',' or '}'")
        }
        return try BSONWriter.document(elements)
    }

    private func checkKey(_ key: String) throws {
        if key.utf8.contains(0) { throw JSONParseError(.forbiddenKey, "a key contains NUL") }
        guard refusesOperatorKeys else { return }
        if key.hasPrefix("$") { throw JSONParseError(.forbiddenKey, "the key \"\(key)\" starts with '$'", key: key) }
        if key.contains(".") { throw JSONParseError(.forbiddenKey, "the key \"\(key)\" contains '.'", key: key) }
    }

    private mutating func parseArray(depth: Int) throws -> [BSONValue] {
        guard depth <= maximumDepth else {
            throw JSONParseError(.tooDeep, "JSON nests deeper than \(maximumDepth) levels")
        }
        position += 1
        var values: [BSONValue] = []
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "]") {
            position += 1
            return values
        }
        while true {
            skipWhitespace()
            values.append(try parseValue(depth: depth))
            skipWhitespace()
            guard position < input.count else { throw error("unexpected end of JSON") }
            if input[position] == UInt8(ascii: ",") { position += 1; continue }
            if input[position] == UInt8(ascii: "]") { position += 1; break }
            throw error("expected ',' or ']'")
        }
        return values
    }

    private mutating func parseString() throws -> String {
        position += 1
        var bytes: [UInt8] = []
        while true {
            guard position < input.count else { throw error("unterminated string") }
            let byte = input[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: bytes, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < input.count else { throw error("unterminated escape") }
                let escape = input[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"): bytes.append(contentsOf: try parseUnicodeEscape())
                default: throw error("invalid escape")
                }
            case 0..<0x20:
                throw error("control character in string")
            default:
                bytes.append(byte)
            }
        }
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard position + 4 <= input.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let char = input[position]
            let digit: UInt32
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(char - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(char - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(char - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private mutating func parseUnicodeEscape() throws -> [UInt8] {
        var scalar = try parseHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard position + 2 <= input.count, input[position] == UInt8(ascii: "\\"),
                input[position + 1] == UInt8(ascii: "u")
            else { throw error("lone surrogate in \\u escape") }
            position += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw error("lone surrogate in \\u escape")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
        return Array(String(Character(unicode)).utf8)
    }

    private mutating func parseNumber() throws -> BSONValue {
        let start = position
        var integral = true
        if input[position] == UInt8(ascii: "-") { position += 1 }
        guard position < input.count, Self.isDigit(input[position]) else { throw error("invalid number") }
        if input[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < input.count, Self.isDigit(input[position]) { position += 1 }
        }
        if position < input.count, input[position] == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard position < input.count, Self.isDigit(input[position]) else { throw error("invalid number") }
            while position < input.count, Self.isDigit(input[position]) { position += 1 }
        }
        if position < input.count, input[position] == UInt8(ascii: "e") || input[position] == UInt8(ascii: "E") {
            integral = false
            position += 1
            if position < input.count, input[position] == UInt8(ascii: "+") || input[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < input.count, Self.isDigit(input[position]) else { throw error("invalid number") }
            while position < input.count, Self.isDigit(input[position]) { position += 1 }
        }
        let text = String(decoding: input[start..<position], as: UTF8.self)
        if integral, let int = Int64(text) { return BSONValue(integer: int) }
        guard let double = Double(text), double.isFinite else { throw error("number out of range") }
        return .double(double)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}

/// Writes documents as JSON in the shape the legacy Node.js hub's clients read.
///
/// ObjectIds are 24-hex strings; int32, int64, doubles and datetimes (Unix ms) are numbers;
/// binary is base64; regexes are `/pattern/options`; decimal128 is its decimal string;
/// everything else is JSON's natural form. Strings are escaped as `JSON.stringify` escapes them.
public struct LegacyJSONWriter: Sendable {
    public init() {}

    /// The JSON text of `document`.
    public func string(_ document: BSONDocument) -> String {
        String(decoding: bytes(document), as: UTF8.self)
    }

    /// The UTF-8 JSON of `document`.
    public func bytes(_ document: BSONDocument) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(document.bytes.count * 2)
        write(.document(document), to: &out)
        return out
    }

    /// The UTF-8 JSON of `value`.
    public func bytes(_ value: BSONValue) -> [UInt8] {
        var out: [UInt8] = []
        write(value, to: &out)
        return out
    }

    /// Appends the JSON of `value` to `out`.
    public func write(_ value: BSONValue, to out: inout [UInt8]) {
        switch value {
        case .double(let double):
            writeNumber(double, to: &out)
        case .string(let string), .symbol(let string), .javascript(let string):
            writeString(string, to: &out)
        case .document(let document):
            out.append(UInt8(ascii: "{"))
            var first = true
            for element in document.elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(element.key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(element.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let array):
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .binary(let binary):
            writeString(Base64.encode(binary.data), to: &out)
        case .undefined, .null, .minKey, .maxKey:
            out.append(contentsOf: "null".utf8)
        case .objectID(let id):
            writeString(id.hex, to: &out)
        case .bool(let bool):
            out.append(contentsOf: (bool ? "true" : "false").utf8)
        case .datetime(let milliseconds):
            out.append(contentsOf: String(milliseconds).utf8)
        case .regex(let regex):
            writeString("/\(regex.pattern)/\(regex.options)", to: &out)
        case .dbPointer(_, let id):
            writeString(id.hex, to: &out)
        case .javascriptWithScope(let code, _):
            writeString(code, to: &out)
        case .int32(let int):
            out.append(contentsOf: String(int).utf8)
        case .timestamp(let timestamp):
            out.append(contentsOf: String(UInt64(timestamp.seconds) << 32 | UInt64(timestamp.increment)).utf8)
        case .int64(let int):
            out.append(contentsOf: String(int).utf8)
        case .decimal128(let decimal):
            writeString(decimal.description, to: &out)
        }
    }

    /// Numbers as JavaScript prints them: integral values without a fraction, NaN and infinities as null.
    private func writeNumber(_ double: Double, to out: inout [UInt8]) {
        if !double.isFinite {
            out.append(contentsOf: "null".utf8)
        } else if double.rounded() == double, abs(double) < 1e15 {
            out.append(contentsOf: String(Int64(double)).utf8)
        } else {
            out.append(contentsOf: "\(double)".utf8)
        }
    }

    private func writeString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(Self.hex[Int(byte >> 4)])
                out.append(Self.hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hex = Array("0123456789abcdef".utf8)
}

/// Standard base64 (RFC 4648) with padding, for binary values in JSON.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                if position <= chunk.count {
                    out.append(alphabet[Int(value >> (18 - 6 * UInt32(position)) & 0x3F)])
                } else {
                    out.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

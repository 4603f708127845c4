import JSONText

/// Writes documents as JSON in the shape the legacy Node.js hub served, which every existing client reads.
///
/// The legacy hub read documents with the Node.js driver 3.x (js-bson 1.x, default options) and answered
/// `JSON.stringify` of what the driver made of them. So each BSON type is written as `JSON.stringify`
/// writes the driver's JavaScript value (js-bson 1.1 `lib/bson/parser/deserializer.js` and each type's
/// `toJSON`):
///
/// | BSON | the driver's value | JSON written |
/// | --- | --- | --- |
/// | double | number | `Number::toString`: `1`, `0.5`, `1e+21`, `1e-7`; NaN, ±Infinity `null` |
/// | int32 | number | `42` |
/// | int64 in ±2^53 | number (`promoteLongs`) | `1700000000123` |
/// | int64 beyond | `Long`; `toJSON` = `toString()` | a string: `"9007199254740993"` |
/// | datetime | `Date`; `toJSON` = `toISOString()` | `"2017-08-28T09:00:00.000Z"`, `"+012345-…"`, `"-000001-…"` |
/// | datetime past ±8.64e15 ms | an invalid `Date` | `null` |
/// | decimal128 | `Decimal128`; `toJSON` | `{"$numberDecimal":"1.10"}`: the canonical string (libbson's) |
/// | binary | `Binary`; `toJSON` = base64 | `"aGVsbG8="` (subtype 2 without its inner length) |
/// | ObjectId | `ObjectID`; `toJSON` = hex | `"5a1b2c3d4e5f60718293a4b5"` |
/// | string, symbol | string; `Symbol.toJSON` = value | `"text"` |
/// | bool, null | boolean, null | `true`, `null` |
/// | undefined | `undefined` | the key left out of an object; `null` in an array |
/// | regex | `RegExp` (nothing enumerable) | `{}` |
/// | timestamp | `Timestamp`; `toJSON` = `toString()` | signed (seconds << 32 \| increment): `"6459247702101196801"` |
/// | code | `Code`; `toJSON` = `{scope, code}` | `{"code":"function () {}"}` (scope undefined) |
/// | code with scope | `Code` | `{"scope":{…},"code":"…"}` |
/// | DBPointer | `DBRef` of "db.collection" | `{"$ref":"collection","$id":"<hex>","$db":"db"}` |
/// | minKey, maxKey | `MinKey`, `MaxKey` | `{"_bsontype":"MinKey"}`, `{"_bsontype":"MaxKey"}` (their one own key) |
/// | document, `$id` not null | `DBRef` | `{"$ref":…,"$id":…,"$db":…}` alone; `$db` `""` if null or absent |
///
/// Strings are escaped as `JSON.stringify` escapes them. The writer runs on the cube's load for GET /channel,
/// so it appends to one byte buffer and formats numbers and dates by arithmetic (`JavaScriptText`).
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

    /// Appends the JSON of `value` to `out` (`undefined` on its own is written as `null`).
    public func write(_ value: BSONValue, to out: inout [UInt8]) {
        switch value {
        case .double(let double):
            JavaScriptText.appendNumber(double, to: &out)
        case .string(let string), .symbol(let string):
            writeString(string, to: &out)
        case .document(let document):
            writeDocument(document.elements, to: &out)
        case .array(let array):
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .binary(let binary):
            writeString(Base64.encode(binary.data), to: &out)
        case .undefined, .null:
            out.append(contentsOf: "null".utf8)
        case .minKey:
            out.append(contentsOf: #"{"_bsontype":"MinKey"}"#.utf8)
        case .maxKey:
            out.append(contentsOf: #"{"_bsontype":"MaxKey"}"#.utf8)
        case .objectID(let id):
            writeString(id.hex, to: &out)
        case .bool(let bool):
            out.append(contentsOf: (bool ? "true" : "false").utf8)
        case .datetime(let milliseconds):
            JavaScriptText.appendDate(milliseconds: milliseconds, to: &out)
        case .regex:
            out.append(contentsOf: "{}".utf8)
        case .dbPointer(let namespace, let id):
            // js-bson splits the namespace at its first dot: the database, then the collection.
            let parts = namespace.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            writeDBRef(
                reference: .string(parts.count > 1 ? String(parts[1]) : ""), id: .objectID(id),
                database: .string(String(parts[0])), to: &out)
        case .javascript(let code):
            out.append(contentsOf: #"{"code":"#.utf8)
            writeString(code, to: &out)
            out.append(UInt8(ascii: "}"))
        case .javascriptWithScope(let code, let scope):
            out.append(contentsOf: #"{"scope":"#.utf8)
            write(.document(scope), to: &out)
            out.append(contentsOf: #","code":"#.utf8)
            writeString(code, to: &out)
            out.append(UInt8(ascii: "}"))
        case .int32(let int):
            JavaScriptText.appendInteger(Int64(int), to: &out)
        case .timestamp(let timestamp):
            let value = Int64(bitPattern: UInt64(timestamp.seconds) << 32 | UInt64(timestamp.increment))
            out.append(UInt8(ascii: "\""))
            JavaScriptText.appendInteger(value, to: &out)
            out.append(UInt8(ascii: "\""))
        case .int64(let int):
            if int.magnitude <= Self.largestExactInteger {
                JavaScriptText.appendInteger(int, to: &out)
            } else {
                out.append(UInt8(ascii: "\""))
                JavaScriptText.appendInteger(int, to: &out)
                out.append(UInt8(ascii: "\""))
            }
        case .decimal128(let decimal):
            out.append(contentsOf: #"{"$numberDecimal":"#.utf8)
            writeString(decimal.description, to: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The driver turns an int64 into a JavaScript number up to 2^53 either side, a `Long` beyond.
    private static let largestExactInteger: UInt64 = 1 << 53

    private func writeDocument(_ elements: [(key: String, value: BSONValue)], to out: inout [UInt8]) {
        // js-bson makes every object whose `$id` is neither null nor undefined a DBRef.
        if let id = elements.first(where: { $0.key == "$id" })?.value, !id.isNull {
            let field = { (key: String) in elements.first { $0.key == key }?.value }
            var database = BSONValue.string("")
            if let value = field("$db"), !value.isNull { database = value }
            writeDBRef(reference: field("$ref") ?? .undefined, id: id, database: database, to: &out)
        } else {
            writeObject(elements, to: &out)
        }
    }

    /// `DBRef.prototype.toJSON`: `{$ref, $id, $db}`, in that order (an undefined `$ref` left out).
    private func writeDBRef(reference: BSONValue, id: BSONValue, database: BSONValue, to out: inout [UInt8]) {
        writeObject(
            [(key: "$ref", value: reference), (key: "$id", value: id), (key: "$db", value: database)],
            to: &out)
    }

    /// A JavaScript object's own properties, as JSON.stringify writes them.
    private func writeObject(_ elements: [(key: String, value: BSONValue)], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for element in elements {
            // JSON.stringify leaves out a key whose value is undefined.
            if case .undefined = element.value { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(element.key, to: &out)
            out.append(UInt8(ascii: ":"))
            write(element.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private func writeString(_ string: String, to out: inout [UInt8]) {
        JSONString.append(string, to: &out)
    }
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

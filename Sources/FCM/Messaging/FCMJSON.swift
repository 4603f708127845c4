import JSONText

/// The JSON of FCM's requests, written by hand: compact, keys sorted, `/` left as it is. Byte for byte what
/// Foundation's `JSONEncoder` (`.sortedKeys`, `.withoutEscapingSlashes`) writes for the same values (a test
/// holds it to that), at a fraction of its cost: the relay writes every request and measures every payload,
/// and the encoder was a tenth of the hub's CPU under a POST load.
enum FCMJSON {
    /// A JSON value of the shapes FCM's requests use.
    indirect enum Value {
        case string(String)
        case int(Int)
        /// A finite number: written as `JSONEncoder` writes a Double (an integral one without ".0").
        case double(Double)
        case bool(Bool)
        /// Members in any order: written sorted by key.
        case object([(key: String, value: Value)])
    }

    /// `value` as compact JSON.
    static func bytes(_ value: Value) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(512)
        write(value, to: &output)
        return output
    }

    /// A string-to-string map (FCM's `data`, APNs headers) as an object.
    static func object(_ map: [String: String]) -> Value {
        .object(map.map { (key: $0.key, value: .string($0.value)) })
    }

    private static func write(_ value: Value, to output: inout [UInt8]) {
        switch value {
        case .string(let string):
            JSONString.append(string, to: &output)
        case .int(let number):
            output.append(contentsOf: String(number).utf8)
        case .double(let number):
            let text = number.description
            output.append(contentsOf: (text.hasSuffix(".0") ? String(text.dropLast(2)) : text).utf8)
        case .bool(let flag):
            output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONString.append(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }
}

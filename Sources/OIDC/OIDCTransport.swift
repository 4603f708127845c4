/// What the sign-in needs of HTTP: a GET and a form POST, answering the status and the body whatever the status.
/// The composition root gives one over the hub's libcurl client; the flow itself does no I/O of its own, so its
/// rules are tested with any transport.
public protocol OIDCTransport: Sendable {
    /// GETs `url` (a discovery document, a JWKS).
    /// - Throws: when no response arrived (the sign-in reports the provider unavailable).
    func get(_ url: String) async throws -> (status: Int, body: [UInt8])

    /// POSTs `fields` as `application/x-www-form-urlencoded` to `url`, with HTTP Basic `credentials` when given
    /// (the token request).
    /// - Throws: when no response arrived.
    func postForm(_ url: String, fields: [(String, String)], basicCredentials: (user: String, password: String)?)
        async throws -> (status: Int, body: [UInt8])
}

/// `application/x-www-form-urlencoded` escaping: everything but unreserved characters as `%XX`.
public enum FormEncoding {
    /// `fields` as a form body: each name and value encoded, joined with `&`.
    public static func body(_ fields: [(String, String)]) -> [UInt8] {
        Array(fields.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&").utf8)
    }

    /// `text` with every byte outside `A-Z a-z 0-9 - . _ ~` percent-encoded.
    public static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(UnicodeScalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

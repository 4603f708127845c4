import JWTKit

/// The claims of a verified JWT as the hub reads them: `iss`, `aud` (a string or an array), `exp`, `iat` and `nbf`
/// (Unix seconds, kept in ms), every claim whose value is a string, an array of strings (a provider's `groups`) or
/// a boolean (`email_verified`). The time and audience checks are the caller's, against its own clock, so
/// `verify(using:)` checks nothing.
public struct TokenClaims: JWTPayload {
    public var issuer: String?
    public var audience: [String]?
    public var expiresAt: Int64?
    public var issuedAt: Int64?
    /// `nbf`: not to be accepted before this (Unix ms), when the issuer says.
    public var notBefore: Int64?
    /// Every claim whose value is a string, by name.
    public var strings: [String: String]
    /// Every claim whose value is an array of strings, by name.
    public var lists: [String: [String]]
    /// Every claim whose value is a boolean (`email_verified`), by name.
    public var bools: [String: Bool]

    /// Any claim name.
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var strings: [String: String] = [:]
        var lists: [String: [String]] = [:]
        var bools: [String: Bool] = [:]
        for key in container.allKeys {
            if let value = try? container.decode(String.self, forKey: key) {
                strings[key.stringValue] = value
            } else if let value = try? container.decode([String].self, forKey: key) {
                lists[key.stringValue] = value
            } else if let value = try? container.decode(Bool.self, forKey: key) {
                bools[key.stringValue] = value
            }
        }
        self.strings = strings
        self.lists = lists
        self.bools = bools
        issuer = strings["iss"]
        audience = strings["aud"].map { [$0] } ?? lists["aud"]
        expiresAt = Self.milliseconds(container, "exp")
        issuedAt = Self.milliseconds(container, "iat")
        notBefore = Self.milliseconds(container, "nbf")
    }

    /// A NumericDate claim (Unix seconds, perhaps with a fraction) in Unix ms; nil when absent or not a number.
    private static func milliseconds(_ container: KeyedDecodingContainer<Key>, _ name: String) -> Int64? {
        guard let seconds = try? container.decode(Double.self, forKey: Key(stringValue: name)), seconds.isFinite,
            abs(seconds) < 1e12
        else { return nil }
        return Int64((seconds * 1000).rounded(.down))
    }

    /// Written back as strings and lists only: the hub never signs one.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in strings { try container.encode(value, forKey: Key(stringValue: name)) }
        for (name, value) in lists { try container.encode(value, forKey: Key(stringValue: name)) }
        for (name, value) in bools { try container.encode(value, forKey: Key(stringValue: name)) }
    }

    /// The checks are the caller's, against its injected clock.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

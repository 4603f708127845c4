import Foundation

/// The header of a JWT, read before anything is verified: its `alg`, its `kid`, and its signed part.
public struct TokenHeader: Sendable {
    /// The algorithm the header names (`alg`), checked against the key's pinned one.
    public let algorithm: String
    /// The key it names (`kid`), if any.
    public let kid: String?
    /// The header and claims as sent (`header.claims`): what the signature covers.
    public let signedPart: Substring

    /// - Throws: `SignedTokenError.malformed` when the token is not three parts with a JSON header naming an `alg`.
    public init(_ token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = Self.base64URLDecoded(parts[0]),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let algorithm = object["alg"] as? String
        else {
            throw SignedTokenError(.malformed)
        }
        self.algorithm = algorithm
        self.kid = object["kid"] as? String
        self.signedPart = token[parts[0].startIndex..<parts[1].endIndex]
    }

    private static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

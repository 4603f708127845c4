import Crypto
import Foundation
import Mongo

/// Random secrets: API tokens, device secrets, portal sessions and CSRF tokens all come from here.
public enum Secret {
    /// `byteCount` random bytes from the system's generator, base64url without padding (43 characters for
    /// 32 bytes: cookie-, header- and URL-safe).
    public static func make(byteCount: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return String(
            Data(bytes).base64EncodedString().compactMap { character -> Character? in
                switch character {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: character
                }
            })
    }

    /// The stored form of a random secret: SHA-256 in hex (the secret is random, so a fast hash suffices and
    /// a leaked collection opens nothing).
    public static func hash(_ secret: String) -> String {
        Hex.encode(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Compares two secrets (or their hashes) in time independent of where they differ.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Random passwords people can type: 20 characters without look-alikes (about 110 bits).
public enum PasswordGenerator {
    private static let alphabet = Array("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    /// A new password of `length` characters.
    public static func make(length: Int = 20) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }
}

import Crypto
import _CryptoExtras
import Foundation

/// The signed assertion (RFC 7523) a service account exchanges for an access token.
enum ServiceAccountJWT {
    /// The OAuth2 scope FCM HTTP v1 requires.
    static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The lifetime Google allows an assertion at most.
    static let lifetime: Int64 = 3600

    /// A compact RS256 JWT: iss = client_email, scope, aud = token_uri, iat = `issuedAt`, exp = iat + 3600.
    /// - Throws: what swift-crypto's RSA signing throws.
    static func make(for account: ServiceAccount, issuedAt: Int64) throws -> String {
        var header: [String: String] = ["alg": "RS256", "typ": "JWT"]
        if let keyID = account.privateKeyID { header["kid"] = keyID }
        let claims = Claims(
            iss: account.clientEmail,
            scope: firebaseMessagingScope,
            aud: account.tokenURI,
            iat: issuedAt,
            exp: issuedAt + lifetime
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = try base64URL(encoder.encode(header)) + "." + base64URL(encoder.encode(claims))
        let digest = SHA256.hash(data: Array(signingInput.utf8))
        let signature = try account.privateKey.signature(for: digest, padding: .insecurePKCS1v1_5)
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }

    /// Base64url without padding (RFC 7515 section 2).
    static func base64URL(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private struct Claims: Encodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }
}

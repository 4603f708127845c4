import Crypto
import Foundation
import Hummingbird
import _CryptoExtras

/// Google's OAuth2 token endpoint for service accounts (RFC 7523 JWT bearer grant), as the fake plays it.
extension FakeFCMState {
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// Answers a form `grant_type=...&assertion=...`: an access token for a valid assertion, else an OAuth2
    /// error (`invalid_grant` for a bad signature, issuer, audience, scope or time).
    func token(form: String) -> Response {
        let fields = Self.parseForm(form)
        let now = Date()
        return withState { state -> Response in
            state.tokenExchanges += 1
            if state.tokenFailures.remaining > 0 {
                state.tokenFailures.remaining -= 1
                return Self.oauthError(state.tokenFailures.status, "temporarily_unavailable", "Injected failure.")
            }
            guard fields["grant_type"] == Self.jwtBearerGrant else {
                let grant = fields["grant_type"] ?? ""
                return Self.oauthError(400, "unsupported_grant_type", "Invalid grant_type: \(grant)")
            }
            guard let assertion = fields["assertion"] else {
                return Self.oauthError(400, "invalid_request", "Missing required parameter: assertion")
            }
            if let problem = verify(assertion: assertion, trusted: state.trusted, audience: state.tokenURI, now: now) {
                return Self.oauthError(400, "invalid_grant", problem)
            }
            let token = "ya29.fake-" + (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            state.tokens[token] = now.addingTimeInterval(TimeInterval(state.tokenLifetime))
            state.tokensIssued += 1
            return Self.json(200, ["access_token": token, "expires_in": state.tokenLifetime, "token_type": "Bearer"])
        }
    }

    /// Why `assertion` is refused, or nil when it is a valid RS256 JWT from a trusted account for this endpoint.
    private func verify(
        assertion: String,
        trusted: [String: _RSA.Signing.PublicKey],
        audience: String,
        now: Date
    ) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Self.base64URLDecode(parts[0]),
            let claimBytes = Self.base64URLDecode(parts[1]),
            let signature = Self.base64URLDecode(parts[2]),
            let header = (try? JSONSerialization.jsonObject(with: headerBytes)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimBytes)) as? [String: Any]
        else { return "Invalid JWT: malformed" }
        guard header["alg"] as? String == "RS256" else { return "Invalid JWT: unsupported alg" }
        guard let issuer = claims["iss"] as? String, let key = trusted[issuer] else {
            return "Invalid JWT Signature."  // Google cannot find a key for an unknown issuer either
        }
        let digest = SHA256.hash(data: Array("\(parts[0]).\(parts[1])".utf8))
        guard key.isValidSignature(.init(rawRepresentation: signature), for: digest, padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard claims["aud"] as? String == audience else { return "Invalid JWT: audience" }
        let scopes = (claims["scope"] as? String ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(Self.firebaseMessagingScope) else { return "Invalid JWT: scope" }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
            exp > iat, exp - iat <= 3600
        else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        }
        let nowSeconds = Int64(now.timeIntervalSince1970)
        guard iat <= nowSeconds + 300, exp > nowSeconds else {
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        }
        return nil
    }

    static func oauthError(_ status: Int, _ error: String, _ description: String) -> Response {
        json(status, ["error": error, "error_description": description])
    }

    static func parseForm(_ form: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    static func base64URLEncode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

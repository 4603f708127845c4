import Crypto
import Foundation

/// A sign-in begun and not yet finished: what the callback must find again (kept by the hub under the browser's
/// pre-login cookie, never in the URL but `state`). `state` ties the callback to this browser, `nonce` the id_token
/// to this request, and the PKCE verifier the code to this client (RFC 7636, S256).
public struct PendingSignIn: Sendable, Equatable {
    /// Sent in the authorization request and returned with the code; compared before anything else.
    public var state: String
    /// Sent in the authorization request; the id_token must carry it.
    public var nonce: String
    /// The PKCE verifier: its S256 hash goes in the authorization request, itself in the token request.
    public var codeVerifier: String

    public init(state: String, nonce: String, codeVerifier: String) {
        self.state = state
        self.nonce = nonce
        self.codeVerifier = codeVerifier
    }

    /// A new one: each value 32 random bytes, base64url (a 43-character verifier, as RFC 7636 asks).
    public static func make() -> PendingSignIn {
        PendingSignIn(state: randomText(), nonce: randomText(), codeVerifier: randomText())
    }

    /// The verifier's S256 challenge: base64url(SHA-256(verifier)) without padding.
    public var codeChallenge: String {
        Self.base64URL(Data(SHA256.hash(data: Data(codeVerifier.utf8))))
    }

    /// Whether `returned` is this sign-in's `state`, compared in constant time.
    public func matches(state returned: String) -> Bool {
        Self.equalInConstantTime(state, returned)
    }

    /// Whether two secrets are equal, in a time that does not tell how much of them is.
    static func equalInConstantTime(_ one: String, _ other: String) -> Bool {
        let a = Array(one.utf8), b = Array(other.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The authorization request's URL (authorization code flow with PKCE): where the browser is sent.
    public func authorizationURL(
        metadata: ProviderMetadata, settings: OIDCSettings, redirectURI: String
    ) -> String {
        let fields: [(String, String)] = [
            ("response_type", "code"), ("client_id", settings.clientID), ("redirect_uri", redirectURI),
            ("scope", settings.scopes.joined(separator: " ")), ("state", state), ("nonce", nonce),
            ("code_challenge", codeChallenge), ("code_challenge_method", "S256"),
        ]
        let separator = metadata.authorizationEndpoint.contains("?") ? "&" : "?"
        return metadata.authorizationEndpoint + separator + String(decoding: FormEncoding.body(fields), as: UTF8.self)
    }

    private static func randomText() -> String {
        var generator = SystemRandomNumberGenerator()
        return base64URL(Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

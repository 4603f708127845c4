import Crypto
import Foundation
import JWTKit
import NIOConcurrencyHelpers

/// A person the fake provider signs in: the claims their id_token carries.
public struct FakeOIDCUser: Sendable, Equatable {
    public var subject: String
    public var email: String
    public var groups: [String]
    public var name: String

    public init(subject: String, email: String, groups: [String], name: String = "Test User") {
        self.subject = subject
        self.email = email
        self.groups = groups
        self.name = name
    }
}

/// What the next id_token gets wrong, for the tests that every check of the hub refuses it.
public enum FakeOIDCTamper: String, Sendable, CaseIterable {
    /// Another nonce than the authorization request's.
    case wrongNonce = "wrong_nonce"
    /// `exp` an hour ago.
    case expired
    /// `aud` another client.
    case wrongAudience = "wrong_audience"
    /// Two audiences and no `azp`.
    case extraAudience = "extra_audience"
    /// Signed by a key the JWKS does not hold, under the JWKS key's kid.
    case foreignKey = "foreign_key"
    /// `alg` HS256 under the JWKS key's kid (the algorithm-confusion attack).
    case hs256
    /// `email_verified: false`: the address is the user's word only.
    case unverifiedEmail = "unverified_email"
}

/// The fake provider's state, behind one lock.
final class FakeOIDCState: Sendable {
    struct Grant: Sendable {
        var clientID: String
        var redirectURI: String
        var challenge: String
        var nonce: String
        var user: FakeOIDCUser
    }

    struct Values: Sendable {
        var baseURL = ""
        var user = FakeOIDCUser(subject: "u1", email: "teacher@school.test", groups: ["staff"])
        var denyNext = false
        var tamperNext: FakeOIDCTamper?
        var tokenEndpointOverride: String?
        var grants: [String: Grant] = [:]
        var codesRedeemed = 0
        var codesRefused = 0
        var discoveryFetches = 0
        var jwksFetches = 0
        var endSessions = 0
        var tokenLifetime = 3600
    }

    let clientID: String
    let clientSecret: String?
    let key: ES256PrivateKey
    let kid = "fake-oidc-1"
    private let values = NIOLockedValueBox(Values())

    init(clientID: String, clientSecret: String?) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.key = ES256PrivateKey()
    }

    func withValues<T>(_ body: (inout Values) -> T) -> T { values.withLockedValue(body) }

    var issuer: String { withValues { $0.baseURL } }

    /// The discovery document.
    func discovery() -> [String: Any] {
        let base = issuer
        let token =
            withValues {
                $0.discoveryFetches += 1; return $0.tokenEndpointOverride
            } ?? base + "/token"
        return [
            "issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": token,
            "jwks_uri": base + "/jwks", "end_session_endpoint": base + "/logout",
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"], "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": ["openid", "email", "profile"],
        ]
    }

    /// The JWKS: the one P-256 key, with its kid (no `alg`: the hub pins ES256 by the curve).
    func jwks() -> [String: Any] {
        withValues { $0.jwksFetches += 1 }
        let parameters = key.publicKey.parameters!
        return [
            "keys": [["kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "x": parameters.x, "y": parameters.y]]
        ]
    }

    /// The authorization endpoint: the configured user signs in at once (no password page), or, after `denyNext`,
    /// the browser goes back with `error=access_denied`.
    func authorize(_ query: [String: String]) -> (status: Int, location: String?, text: String) {
        guard query["client_id"] == clientID, let redirect = query["redirect_uri"], query["response_type"] == "code",
            let challenge = query["code_challenge"], query["code_challenge_method"] == "S256",
            let nonce = query["nonce"], (query["scope"] ?? "").split(separator: " ").contains("openid")
        else {
            return (400, nil, "invalid authorization request")
        }
        let state = query["state"] ?? ""
        let separator = redirect.contains("?") ? "&" : "?"
        if withValues({ values in
            defer { values.denyNext = false }
            return values.denyNext
        }) {
            return (302, redirect + separator + "error=access_denied&state=" + Self.encode(state), "")
        }
        let code = Self.random()
        withValues {
            $0.grants[code] = Grant(
                clientID: clientID, redirectURI: redirect, challenge: challenge, nonce: nonce, user: $0.user)
        }
        return (302, redirect + separator + "code=" + code + "&state=" + Self.encode(state), "")
    }

    /// The token endpoint: a code once, for its client, redirect URI and PKCE verifier; the id_token signed.
    func token(form: [String: String], authorization: String?) async -> (status: Int, body: [String: Any]) {
        var clientID = form["client_id"], secret = form["client_secret"]
        if let authorization, authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({
                String(decoding: $0, as: UTF8.self)
            }),
            let colon = decoded.firstIndex(of: ":")
        {
            clientID = String(decoded[..<colon]).removingPercentEncoding
            secret = String(decoded[decoded.index(after: colon)...]).removingPercentEncoding
        }
        guard clientID == self.clientID, clientSecret == nil || secret == clientSecret else {
            return (401, ["error": "invalid_client"])
        }
        guard form["grant_type"] == "authorization_code", let code = form["code"],
            let grant = withValues({ $0.grants.removeValue(forKey: code) })
        else {
            withValues { $0.codesRefused += 1 }
            return (400, ["error": "invalid_grant"])
        }
        let verifier = form["code_verifier"] ?? ""
        let challenge = Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        guard grant.redirectURI == form["redirect_uri"], challenge == grant.challenge else {
            withValues { $0.codesRefused += 1 }
            return (400, ["error": "invalid_grant"])
        }
        let (tamper, lifetime) = withValues { values in
            defer { values.tamperNext = nil }
            values.codesRedeemed += 1
            return (values.tamperNext, values.tokenLifetime)
        }
        do {
            let idToken = try await sign(grant: grant, tamper: tamper, lifetime: lifetime)
            return (
                200,
                ["access_token": Self.random(), "token_type": "Bearer", "expires_in": lifetime, "id_token": idToken]
            )
        } catch {
            return (500, ["error": "server_error"])
        }
    }

    private func sign(grant: Grant, tamper: FakeOIDCTamper?, lifetime: Int) async throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims = IDClaims(
            iss: issuer, sub: grant.user.subject, aud: [grant.clientID], exp: now + lifetime, iat: now,
            nonce: grant.nonce, email: grant.user.email, name: grant.user.name, groups: grant.user.groups, azp: nil,
            email_verified: true)
        switch tamper {
        case .wrongNonce?: claims.nonce = "not-the-nonce"
        case .expired?: claims.exp = now - 3600
        case .wrongAudience?: claims.aud = ["another-client"]
        case .extraAudience?: claims.aud = [grant.clientID, "another-client"]
        case .unverifiedEmail?: claims.email_verified = false
        default: break
        }
        let keys = JWTKeyCollection()
        switch tamper {
        case .foreignKey?: await keys.add(ecdsa: ES256PrivateKey(), kid: JWKIdentifier(string: kid))
        case .hs256?:
            await keys.add(
                hmac: HMACKey(from: String(repeating: "k", count: 32)), digestAlgorithm: .sha256,
                kid: JWKIdentifier(string: kid))
        default: await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        }
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    struct IDClaims: JWTPayload {
        var iss: String
        var sub: String
        var aud: [String]
        var exp: Int
        var iat: Int
        var nonce: String
        var email: String
        var name: String
        var groups: [String]
        var azp: String?
        var email_verified: Bool

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func random() -> String {
        (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}

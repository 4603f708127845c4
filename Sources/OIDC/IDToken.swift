import HubTime
import SignedTokens

/// A verified id_token: its claims, when it expires, and the token itself (the end-session request's
/// `id_token_hint`).
public struct IDToken: Sendable {
    public var claims: TokenClaims
    /// `exp`, in Unix ms: the portal session ends by then.
    public var expiresAt: Int64
    /// The token as the provider sent it.
    public var raw: String

    /// How far in the future an `iat` may be (clocks differ a little).
    static let leewayMilliseconds: Int64 = 60 * 1000
    /// How old an `iat` may be: the token comes straight from the token endpoint.
    static let maximumAgeMilliseconds: Int64 = 10 * 60 * 1000
    /// The longest id_token read.
    static let maximumLength = 32 * 1024

    /// Verifies `raw` (OpenID Connect Core 1.0, 3.1.3.7): signed by a key of `keys` with that key's pinned algorithm,
    /// `iss` the provider's, `aud` holding the client id, `azp` the client id when present (and required when there
    /// are several audiences), `exp` in the future, `iat` present and recent, `nonce` the sign-in's.
    /// - Throws: `OIDCError.invalidIDToken` with the check that failed; `SignedTokenError` and jwt-kit's
    ///   `JWTError` are the provider's to turn into `invalidIDToken` (it may load the keys again first).
    static func verify(
        _ raw: String, keys: KeyRing, issuer: String, clientID: String, nonce: String, now: Int64
    ) async throws -> IDToken {
        guard (1...maximumLength).contains(raw.utf8.count) else {
            throw OIDCError(.invalidIDToken, "the id_token is empty or too long")
        }
        let header = try TokenHeader(raw)
        let claims = try await keys.verify(raw, header: header)
        guard claims.issuer == issuer else { throw OIDCError(.invalidIDToken, "the id_token's issuer (iss) is wrong") }
        guard let audience = claims.audience, audience.contains(clientID) else {
            throw OIDCError(.invalidIDToken, "the id_token is not for this hub (aud)")
        }
        if audience.count > 1 || claims.strings["azp"] != nil {
            guard claims.strings["azp"] == clientID else {
                throw OIDCError(.invalidIDToken, "the id_token was issued to another party (azp)")
            }
        }
        guard let expiresAt = claims.expiresAt, expiresAt > now else {
            throw OIDCError(.invalidIDToken, "the id_token has expired (exp)")
        }
        guard let issuedAt = claims.issuedAt, issuedAt <= now + leewayMilliseconds,
            issuedAt >= now - maximumAgeMilliseconds
        else {
            throw OIDCError(.invalidIDToken, "the id_token's issue time (iat) is missing or not recent")
        }
        if let notBefore = claims.notBefore, notBefore > now + leewayMilliseconds {
            throw OIDCError(.invalidIDToken, "the id_token is not valid yet (nbf)")
        }
        guard let tokenNonce = claims.strings["nonce"], PendingSignIn.equalInConstantTime(tokenNonce, nonce) else {
            throw OIDCError(.invalidIDToken, "the id_token's nonce is not this sign-in's")
        }
        return IDToken(claims: claims, expiresAt: expiresAt, raw: raw)
    }
}

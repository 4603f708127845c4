import Foundation

/// What the hub reads of the provider's discovery document (OpenID Connect Discovery 1.0): its endpoints, checked
/// once when read (the issuer exactly the configured one, the endpoints by `EndpointRule`).
public struct ProviderMetadata: Sendable, Equatable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var jwksURI: String
    /// RP-initiated logout, when the provider offers it.
    public var endSessionEndpoint: String?
    /// How the provider takes the client secret at the token endpoint; `client_secret_basic` when it does not say.
    public var tokenEndpointAuthMethods: [String]

    private struct Document: Decodable {
        var issuer: String?
        var authorization_endpoint: String?
        var token_endpoint: String?
        var jwks_uri: String?
        var end_session_endpoint: String?
        var token_endpoint_auth_methods_supported: [String]?
        var code_challenge_methods_supported: [String]?
    }

    /// Reads and checks a discovery document.
    /// - Throws: `OIDCError` `.misconfigured` (not JSON, a field missing, another issuer, no S256 where the document
    ///   lists its PKCE methods), `.insecureEndpoint`.
    public init(json: [UInt8], expectedIssuer: String) throws {
        guard let document = try? JSONDecoder().decode(Document.self, from: Data(json)) else {
            throw OIDCError(.misconfigured, "the provider's discovery document is not JSON of the expected shape")
        }
        guard let issuer = document.issuer, let authorization = document.authorization_endpoint,
            let token = document.token_endpoint, let jwks = document.jwks_uri
        else {
            throw OIDCError(
                .misconfigured,
                "the provider's discovery document lacks issuer, authorization_endpoint, token_endpoint or jwks_uri")
        }
        guard issuer == expectedIssuer else {
            throw OIDCError(.misconfigured, "the provider's discovery document names another issuer than OIDC_ISSUER")
        }
        if let methods = document.code_challenge_methods_supported, !methods.contains("S256") {
            throw OIDCError(.misconfigured, "the provider does not support PKCE with S256")
        }
        try EndpointRule.check(authorization, name: "authorization_endpoint")
        try EndpointRule.check(token, name: "token_endpoint")
        try EndpointRule.check(jwks, name: "jwks_uri")
        if let end = document.end_session_endpoint { try EndpointRule.check(end, name: "end_session_endpoint") }
        self.issuer = issuer
        self.authorizationEndpoint = authorization
        self.tokenEndpoint = token
        self.jwksURI = jwks
        self.endSessionEndpoint = document.end_session_endpoint
        self.tokenEndpointAuthMethods = document.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]
    }
}

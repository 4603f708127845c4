/// The hub as a client of one OpenID provider (`OIDC_ISSUER`, `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`,
/// `OIDC_SCOPES`, `OIDC_DISPLAY_NAME`).
public struct OIDCSettings: Sendable, Equatable {
    /// The provider's issuer URL: its discovery document is at `<issuer>/.well-known/openid-configuration` and names
    /// exactly this issuer.
    public var issuer: String
    /// The hub's client id at the provider: every id_token's `aud` holds it.
    public var clientID: String
    /// The client secret; nil for a public client (PKCE alone proves the code is the hub's).
    public var clientSecret: String?
    /// The scopes asked for; `openid` is always among them.
    public var scopes: [String]
    /// The provider's name on the login page's button ("Sign in with ...").
    public var displayName: String

    /// The scopes when `OIDC_SCOPES` is not set.
    public static let defaultScopes = ["openid", "email", "profile"]

    public init(
        issuer: String, clientID: String, clientSecret: String? = nil, scopes: [String] = defaultScopes,
        displayName: String = "your school account"
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.scopes = scopes.contains("openid") ? scopes : ["openid"] + scopes
        self.displayName = displayName
    }

    /// Where the discovery document is (OpenID Connect Discovery 1.0, section 4).
    public var discoveryURL: String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }
}

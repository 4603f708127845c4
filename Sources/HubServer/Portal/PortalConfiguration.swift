import FCM

/// How the portal's sessions behave.
public struct PortalConfiguration: Sendable {
    /// Marks the session cookie `Secure` (and names it `__Host-msi_session`): set it when the hub is reached
    /// over HTTPS (`PORTAL_SECURE_COOKIES`).
    public var secureCookies: Bool
    /// How long a session lasts without a request.
    public var sessionLifetime: Duration
    /// Failed logins of one username within `loginWindow` after which further logins are refused (429).
    public var loginAttempts: Int
    public var loginWindow: Duration

    public init(secureCookies: Bool = false, sessionLifetime: Duration = .seconds(8 * 3600), loginAttempts: Int = 5,
                loginWindow: Duration = .seconds(60)) {
        self.secureCookies = secureCookies
        self.sessionLifetime = sessionLifetime
        self.loginAttempts = loginAttempts
        self.loginWindow = loginWindow
    }

    /// The portal configuration the environment gives.
    /// - Throws: `ConfigurationError` when `PORTAL_SECURE_COOKIES` is neither true nor false.
    static func fromEnvironment(_ environment: [String: String]) throws -> PortalConfiguration {
        var portal = PortalConfiguration()
        if let value = environment["PORTAL_SECURE_COOKIES"], !value.isEmpty {
            switch value.lowercased() {
            case "1", "true", "yes": portal.secureCookies = true
            case "0", "false", "no": portal.secureCookies = false
            default: throw ConfigurationError("PORTAL_SECURE_COOKIES must be true or false, not \"\(value)\"")
            }
        }
        return portal
    }

    /// The session cookie's name: the `__Host-` prefix makes browsers refuse it unless it is Secure, host-only
    /// and for the whole site.
    var sessionCookieName: String { secureCookies ? "__Host-msi_session" : "msi_session" }
}

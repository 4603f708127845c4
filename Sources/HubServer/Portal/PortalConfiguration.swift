import Foundation
import HubCore
import HubTime

/// How the portal's sessions behave. (How many failed logins are allowed is the login policy's, `LoginLimits`,
/// shared with HTTP Basic.)
public struct PortalConfiguration: Sendable {
    /// Marks the session cookie `Secure` (and names it `__Host-msi_session`): set it when the hub is reached
    /// over HTTPS (`PORTAL_SECURE_COOKIES`).
    public var secureCookies: Bool
    /// How long a session lasts without a request.
    public var sessionLifetime: Duration
    /// How long a session lasts at most after the login, however active (`PORTAL_SESSION_MAX_HOURS`).
    public var sessionMaxLifetime: Duration
    /// The data payload FCM carries before the relay cuts the text (the relay's `FCM_PAYLOAD_LIMIT`): the send
    /// form counts the bytes left to it.
    public var payloadLimit: Int
    /// The school's time zone (`SCHOOL_TIME_ZONE`, an IANA name; default UTC): the send form's "send at" and the
    /// events pages read and show times on its wall clock, and a new event is in it unless the form names another.
    public var schoolTimeZone: TimeZone
    /// Staff sign-in through the school's OpenID provider (`OIDC_*`); nil when `OIDC_ISSUER` is unset.
    public var staffSignIn: StaffSignInConfiguration?

    /// The relay's payload limit when `FCM_PAYLOAD_LIMIT` is not set.
    public static let defaultPayloadLimit = RelayConfiguration().payloadLimit

    public init(
        secureCookies: Bool = false, sessionLifetime: Duration = .seconds(8 * 3600),
        sessionMaxLifetime: Duration = .seconds(12 * 3600), payloadLimit: Int = defaultPayloadLimit,
        schoolTimeZone: TimeZone = TimeZone(identifier: "UTC")!
    ) {
        self.secureCookies = secureCookies
        self.sessionLifetime = sessionLifetime
        self.sessionMaxLifetime = sessionMaxLifetime
        self.payloadLimit = payloadLimit
        self.schoolTimeZone = schoolTimeZone
    }

    /// The portal configuration the environment gives.
    /// - Throws: `ConfigurationError` when `PORTAL_SECURE_COOKIES` is neither true nor false, or
    ///   `PORTAL_SESSION_MAX_HOURS` is not a whole number from 1 to 720, or `SCHOOL_TIME_ZONE` names no zone.
    static func fromEnvironment(_ environment: [String: String]) throws -> PortalConfiguration {
        var portal = PortalConfiguration()
        if let value = environment["PORTAL_SECURE_COOKIES"], !value.isEmpty {
            switch value.lowercased() {
            case "1", "true", "yes": portal.secureCookies = true
            case "0", "false", "no": portal.secureCookies = false
            default: throw ConfigurationError("PORTAL_SECURE_COOKIES must be true or false, not \"\(value)\"")
            }
        }
        if let text = environment["PORTAL_SESSION_MAX_HOURS"], !text.isEmpty {
            guard let hours = Int(text), (1...720).contains(hours) else {
                throw ConfigurationError(
                    "PORTAL_SESSION_MAX_HOURS must be a whole number from 1 to 720, not \"\(text)\"")
            }
            portal.sessionMaxLifetime = .seconds(hours * 3600)
        }
        if let name = environment["SCHOOL_TIME_ZONE"], !name.isEmpty {
            guard let zone = IANAZone.named(name) else {
                throw ConfigurationError(
                    "SCHOOL_TIME_ZONE must be an IANA time zone such as Europe/Berlin, not \"\(name)\"")
            }
            portal.schoolTimeZone = zone
        }
        portal.staffSignIn = try StaffSignInConfiguration.fromEnvironment(environment)
        // The relay's reading of FCM_PAYLOAD_LIMIT, so the form counts down to the limit the relay cuts at.
        portal.payloadLimit = try RelayConfiguration.fromEnvironment(environment).payloadLimit
        return portal
    }

    /// The session cookie's name: the `__Host-` prefix makes browsers refuse it unless it is Secure, host-only
    /// and for the whole site.
    var sessionCookieName: String { secureCookies ? "__Host-msi_session" : "msi_session" }

    /// The idle and the maximum lifetime, as the account service applies them.
    var sessionLifetimes: SessionLifetime { SessionLifetime(idle: sessionLifetime, maximum: sessionMaxLifetime) }
}

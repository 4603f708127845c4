import DAO
import HTTPTypes
import Hummingbird

/// Finds the session of the request's cookie and its user; a disabled or deleted user has no session.
/// An active session's expiry moves forward (at most one write every few minutes).
struct PortalSessionMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext
    let sessions: SessionDAO
    let users: UserDAO
    let configuration: PortalConfiguration

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let secret = request.cookies[configuration.sessionCookieName]?.value, PortalSecret.isWellFormed(secret),
              let session = try await sessions.find(key: PortalSecret.storageKey(secret)) else {
            return try await next(request, context)
        }
        let user: User
        do {
            user = try await users.get(username: session.username)
        } catch let error as DAOError where error.code == .userNotFound {
            return try await next(request, context)
        }
        guard !user.disabled else { return try await next(request, context) }
        let lifetime = configuration.sessionLifetime.milliseconds
        let slack = min(lifetime / 10, 300_000)
        if session.expiresAt - UnixTime.nowMilliseconds() < lifetime - slack {
            try await sessions.extend(key: session.key, lifetimeMS: lifetime, slackMS: slack)
        }
        var context = context
        context.user = PortalUser(username: user.username, role: user.role, csrfToken: session.csrfToken,
                                  sessionKey: session.key)
        return try await next(request, context)
    }
}

extension PortalConfiguration {
    /// The session cookie carrying `secret`: HttpOnly, SameSite=Lax, Secure when configured, for the whole site
    /// (the `__Host-` prefix needs `Path=/`), ending with the browser unless it is logged out first.
    func sessionCookie(_ secret: String) -> Cookie {
        Cookie(name: sessionCookieName, value: secret, path: "/", secure: secureCookies, httpOnly: true, sameSite: .lax)
    }

    /// A cookie that makes the browser forget the session cookie.
    var expiredSessionCookie: Cookie {
        Cookie(name: sessionCookieName, value: "", maxAge: 0, path: "/", secure: secureCookies, httpOnly: true,
               sameSite: .lax)
    }
}

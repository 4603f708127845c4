import DAO
import HubCore
import HTTPTypes
import Hummingbird

/// Finds the session of the request's cookie and its user (`AccountService.session`: a disabled or deleted user
/// has no session; an active session's expiry moves forward, never past its maximum lifetime). When the database
/// is out of reach the request goes on without a user and pages that need one show the outage.
struct PortalSessionMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext
    let accounts: AccountService
    let configuration: PortalConfiguration

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        do {
            context = try await withSession(request, context)
        } catch let error as DAOError where error.code == .unavailable {
            context.sessionFailure = error  // shown as a page by the page middleware, which runs inside this one
        }
        guard let user = context.user else { return try await next(request, context) }
        // The audit log records what the services do for this page as done by the user.
        return try await AuditActor.$current.withValue(AuditActor(kind: .user, name: user.username)) {
            try await next(request, context)
        }
    }

    private func withSession(_ request: Request, _ context: Context) async throws -> Context {
        guard let secret = request.cookies[configuration.sessionCookieName]?.value, PortalSecret.isWellFormed(secret),
            let (session, user) = try await accounts.session(
                key: PortalSecret.storageKey(secret),
                lifetime: configuration.sessionLifetimes)
        else {
            return context
        }
        var context = context
        context.user = PortalUser(
            username: user.username, role: user.role, direct: user.direct,
            csrfToken: session.csrfToken, sessionKey: session.key, providerIDToken: session.idToken)
        return context
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
        Cookie(
            name: sessionCookieName, value: "", maxAge: 0, path: "/", secure: secureCookies, httpOnly: true,
            sameSite: .lax)
    }
}

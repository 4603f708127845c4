import DAO
import Foundation
import HTTPTypes
import HubCore
import Hummingbird
import Logging
import OIDC

/// Signing in through the school's OpenID provider: `GET /portal/login/oidc` begins (the pre-login cookie, then
/// the provider), `GET /portal/login/oidc/callback` finishes (`StaffSignIn.finish`) with a new portal session, or
/// the login page with the reason: 403 for a user in none of the groups, 503 when the provider cannot be reached,
/// 400 for everything else. Never a 500.
struct ProviderSignInController {
    let signIn: StaffSignIn
    let services: HubServices
    let configuration: PortalConfiguration
    let options: StaffSignInConfiguration
    let pages: PortalPages

    /// The pre-login cookie: its secret's hash keys the sign-in begun, so only this browser may finish it.
    static let attemptCookie = "msi_oidc"
    static let beginPath = "/portal/login/oidc"
    static let callbackPath = "/portal/login/oidc/callback"

    func addRoutes(to group: RouterGroup<PortalRequestContext>) {
        group.get("/login/oidc", use: begin)
        group.get("/login/oidc/callback", use: finish)
    }

    /// GET /portal/login/oidc: stores a new sign-in and sends the browser to the provider.
    @Sendable func begin(request: Request, context: PortalRequestContext) async throws -> Response {
        let secret = PortalSecret.make()
        let url: String
        do {
            url = try await signIn.begin(
                attemptKey: PortalSecret.storageKey(secret),
                next: LoginController.safeNext(request.uri.queryParameters.get("next")),
                redirectURI: redirectURI(request), from: context.clientAddress)
        } catch let refusal as SignInRefusal {
            var response = LoginController.page(
                pages: pages, configuration: configuration, signInName: signIn.displayName, context: context,
                next: nil,
                error: refusal.message, status: status(of: refusal))
            if let seconds = refusal.retryAfter { response.headers[.retryAfter] = String(seconds) }
            return response
        }
        var response = Response.redirect(to: url, type: .found)
        // SameSite=Lax: the provider sends the browser back with a top-level GET from its own site.
        response.setCookie(
            Cookie(
                name: Self.attemptCookie, value: secret, maxAge: Int(StaffSignIn.attemptLifetime.components.seconds),
                path: Self.beginPath, secure: configuration.secureCookies, httpOnly: true, sameSite: .lax))
        return response
    }

    /// GET /portal/login/oidc/callback: the provider's answer; a portal session, or the login page with why not.
    @Sendable func finish(request: Request, context: PortalRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        var attemptKey: String?
        if let cookie = request.cookies[Self.attemptCookie]?.value, PortalSecret.isWellFormed(cookie) {
            attemptKey = PortalSecret.storageKey(cookie)
        }
        let callback = StaffSignIn.Callback(
            state: query.get("state").map { String($0) }, code: query.get("code").map { String($0) },
            error: query.get("error").map { String($0) })
        let secret = PortalSecret.make()
        let signedIn: StaffSignIn.SignedIn
        do {
            signedIn = try await signIn.finish(
                attemptKey: attemptKey, callback: callback,
                redirectURI: redirectURI(request), sessionKey: PortalSecret.storageKey(secret),
                csrfToken: PortalSecret.make(), lifetime: configuration.sessionLifetimes)
        } catch let refusal as SignInRefusal {
            context.logger.info(
                "portal sign-in through the OpenID provider refused",
                metadata: ["reason": "\(refusal.code)", "detail": "\(refusal.oidc?.message ?? "")"])
            var response = LoginController.page(
                pages: pages, configuration: configuration, signInName: signIn.displayName, context: context,
                next: nil,
                error: refusal.message, status: status(of: refusal))
            response.setCookie(expiredAttemptCookie)
            return response
        }
        if let old = context.user { try await services.accounts.endSession(key: old.sessionKey) }
        var response = Response.redirect(to: signedIn.next ?? "/portal")
        response.setCookie(configuration.sessionCookie(secret))
        response.setCookie(expiredAttemptCookie)
        return response
    }

    private func status(of refusal: SignInRefusal) -> HTTPResponse.Status {
        switch refusal.code {
        case .notInGroups, .disabled: return .forbidden
        case .tooManyAttempts: return .tooManyRequests
        case .provider where refusal.oidc?.code == .unavailable: return .serviceUnavailable
        default: return .badRequest
        }
    }

    private var expiredAttemptCookie: Cookie {
        Cookie(
            name: Self.attemptCookie, value: "", maxAge: 0, path: Self.beginPath, secure: configuration.secureCookies,
            httpOnly: true, sameSite: .lax)
    }

    /// The callback URL: `OIDC_REDIRECT_URL`, or this request's scheme and host with the callback path.
    func redirectURI(_ request: Request) -> String {
        if let url = options.redirectURL { return url }
        return Self.publicBase(request, configuration: configuration, options: options) + Self.callbackPath
    }

    /// Where the hub is for the provider: the scheme and host of `OIDC_REDIRECT_URL` when set (never a Host header a
    /// client chose), else `https://host` (or `http://` when cookies are not Secure, so the hub is not behind TLS) of
    /// this request.
    static func publicBase(
        _ request: Request, configuration: PortalConfiguration, options: StaffSignInConfiguration
    ) -> String {
        if let url = options.redirectURL.flatMap(URLComponents.init(string:)), let scheme = url.scheme,
            let host = url.host
        {
            return scheme + "://" + host + (url.port.map { ":\($0)" } ?? "")
        }
        let host = request.head.authority ?? "localhost"
        return (configuration.secureCookies ? "https://" : "http://") + host
    }
}

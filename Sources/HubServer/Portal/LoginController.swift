import DAO
import HubCore
import HTTPTypes
import Hummingbird
import OIDC
import Logging

/// Logging in and out, and the menu.
struct LoginController {
    let services: HubServices
    let configuration: PortalConfiguration
    let pages: PortalPages

    static let loginPath = "/portal/login"

    /// The login form on `group`, for everyone; logging out and the menu on `users`, for logged-in users.
    func addRoutes(to group: RouterGroup<PortalRequestContext>, users: RouterGroup<PortalRequestContext>) {
        group.get("/login", use: loginForm)
        group.post("/login", use: login)
        users.post("/logout", use: logout)
        users.get("", use: menu)
    }

    /// GET /portal/login: the form, with a fresh login CSRF token in a cookie and the form; with an OpenID provider,
    /// its button (and no form with `OIDC_ONLY`), or straight to it with `OIDC_AUTO_REDIRECT` (but after a
    /// sign-out, which would otherwise sign the user in again at once).
    @Sendable func loginForm(request: Request, context: PortalRequestContext) async throws -> Response {
        if context.user != nil { return .redirect(to: "/portal") }
        let loggedOut = request.uri.queryParameters.get("logged_out") != nil
        let next = request.uri.queryParameters.get("next")
        if configuration.staffSignIn?.autoRedirect == true, !loggedOut {
            let query = Self.safeNext(next).map { "?next=" + FormEncoding.encode($0) } ?? ""
            return .redirect(to: ProviderSignInController.beginPath + query, type: .found)
        }
        return loginPage(context: context, next: next, notice: loggedOut ? "You have logged out." : nil)
    }

    /// POST /portal/login: a new session for the right password, through the login policy (`AccountService.logIn`):
    /// 429 past the failure limits, 503 when the password checks are full.
    @Sendable func login(request: Request, context: PortalRequestContext) async throws -> Response {
        let username = context.form.trimmed("username")
        let password = context.form["password"] ?? ""
        let next = context.form["next"]
        guard !username.isEmpty, !password.isEmpty, username.count <= 200, password.count <= 1_000 else {
            return loginPage(
                context: context, next: next, username: username,
                error: "Enter your username and password.", status: .unprocessableContent)
        }
        let identity: Identity
        do {
            identity = try await services.accounts.logIn(
                username: username, password: password,
                from: context.clientAddress, logger: context.logger)
        } catch let refusal as LoginRefusal {
            var headers: HTTPFields = [:]
            if let seconds = refusal.retryAfterSeconds { headers[.retryAfter] = String(seconds) }
            switch refusal.code {
            case .throttled:
                return loginPage(
                    context: context, next: next, username: username,
                    error: "Too many failed logins for this username or from this address. "
                        + "Wait a minute, then try again.",
                    status: .tooManyRequests, headers: headers)
            case .passwordsOff:
                return loginPage(
                    context: context, next: next, username: username,
                    error: "Passwords are switched off here: sign in with \(signInName).", status: .forbidden)
            case .busy:
                return loginPage(
                    context: context, next: next, username: username,
                    error: "The hub is busy checking passwords. Try again in a moment.",
                    status: .serviceUnavailable, headers: headers)
            default:
                return loginPage(
                    context: context, next: next, username: username,
                    error: "The username or password is not right.", status: .unauthorized)
            }
        }
        // A fresh session (and id) at every login; one the browser still had ends now.
        if let old = context.user { try await services.accounts.endSession(key: old.sessionKey) }
        let secret = PortalSecret.make()
        _ = try await services.accounts.startSession(
            key: PortalSecret.storageKey(secret), username: identity.name,
            csrfToken: PortalSecret.make(),
            lifetime: configuration.sessionLifetimes)
        context.logger.info("portal login", metadata: ["username": "\(identity.name)"])
        var response = Response.redirect(to: Self.safeNext(next) ?? "/portal")
        response.setCookie(configuration.sessionCookie(secret))
        response.setCookie(
            Cookie(
                name: CSRFMiddleware.loginCookie, value: "", maxAge: 0, path: Self.loginPath,
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    /// POST /portal/logout: ends the session on the server and in the browser.
    @Sendable func logout(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        try await services.accounts.endSession(key: user.sessionKey)
        let target = Self.loginPath + "?logged_out=1"
        var response = Response.redirect(to: target)
        // Signed in through the provider: signed out there too, when it offers RP-initiated logout. A page that
        // moves on by itself, not a redirect: the portal's forms may post only to the hub (`form-action 'self'`),
        // which browsers hold redirects of a form's answer to.
        if let signIn = services.staffSignIn, let options = configuration.staffSignIn, user.providerIDToken != nil {
            let base = ProviderSignInController.publicBase(request, configuration: configuration, options: options)
            if let url = await signIn.provider.endSessionURL(
                idTokenHint: user.providerIDToken, postLogoutRedirectURI: base + target)
            {
                response = pages.render(
                    "signed-out",
                    ["page": ["title": "Signing out", "refreshTo": url], "provider": signIn.displayName, "url": url])
            }
        }
        response.setCookie(configuration.expiredSessionCookie)
        return response
    }

    /// GET /portal: the menu, with how many messages wait for the user's approval (and, for admins, overrides to
    /// review).
    @Sendable func menu(request: Request, context: PortalRequestContext) async throws -> Response {
        let identity = try context.loggedInUser().identity
        let awaiting = (try? await services.approvals.awaiting(for: identity).count) ?? 0
        let overridden = (try? await services.approvals.overridesToReview(for: identity).count) ?? 0
        var data: [String: Any] = ["approvalsWaiting": awaiting, "overridesToReview": overridden]
        data["hasApprovals"] = awaiting > 0 || overridden > 0
        return pages.render("menu", context.page("Menu", data))
    }

    /// The provider's name on the page, when one is configured.
    private var signInName: String { services.staffSignIn?.displayName ?? "your school account" }

    private func loginPage(
        context: PortalRequestContext, next: String?, username: String = "", error: String? = nil,
        notice: String? = nil, status: HTTPResponse.Status = .ok,
        headers: HTTPFields = [:]
    ) -> Response {
        Self.page(
            pages: pages, configuration: configuration, signInName: services.staffSignIn?.displayName,
            context: context, next: next, username: username, error: error, notice: notice, status: status,
            headers: headers)
    }

    /// The login page: the password form (unless `OIDC_ONLY`), the provider's button when one is configured, an
    /// error or a notice; with a fresh login CSRF token in its cookie.
    static func page(
        pages: PortalPages, configuration: PortalConfiguration, signInName: String?,
        context: PortalRequestContext, next: String?, username: String = "", error: String? = nil,
        notice: String? = nil, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        let token = PortalSecret.make()
        var data: [String: Any] = ["username": username, "loginCSRF": token]
        data["passwordForm"] = configuration.staffSignIn?.only != true
        if let signInName, configuration.staffSignIn != nil {
            data["provider"] = signInName
            let query = safeNext(next).map { "?next=" + FormEncoding.encode($0) } ?? ""
            data["providerURL"] = ProviderSignInController.beginPath + query
        }
        if let next = Self.safeNext(next) { data["next"] = next }
        if let error { data["error"] = error }
        var response = pages.render(
            "login", context.page("Log in", data, notice: notice), status: status, headers: headers)
        response.setCookie(
            Cookie(
                name: CSRFMiddleware.loginCookie, value: token, maxAge: 3600, path: Self.loginPath,
                secure: configuration.secureCookies, httpOnly: true, sameSite: .strict))
        return response
    }

    /// `next` when it is a page of the portal (never another site: no `//`, no scheme).
    static func safeNext(_ next: String?) -> String? {
        guard let next, next.hasPrefix("/portal"), !next.hasPrefix("//"), !next.contains("\\"),
            next.utf8.count < 2_000
        else { return nil }
        return next
    }
}

import DAO
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Mongo

/// Every portal answer: failures become pages (or a redirect to log in), and every response carries the security
/// headers: a Content-Security-Policy without inline script, no framing, no sniffing, no cross-site referrer.
struct PortalPageMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext
    let pages: PortalPages

    /// Only the hub's own files; no inline script or style; forms post only to the hub; never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as PortalError where error.status == .unauthorized {
            response = .redirect(to: LoginController.loginPath + Self.nextQuery(for: request))
        } catch let error as PortalError {
            response = errorPage(error, context: context)
        } catch {
            response = errorPage(Self.portalError(error, context: context), context: context)
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "same-origin"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    private func errorPage(_ error: PortalError, context: Context) -> Response {
        pages.render(
            "error", context.page(error.title, ["message": error.message, "status": error.status.code]),
            status: error.status, headers: error.headers)
    }

    /// `?next=` with the page a GET (or HEAD) asked for, so login returns there.
    private static func nextQuery(for request: Request) -> String {
        guard request.method == .get || request.method == .head, request.uri.path != "/portal",
            request.uri.path != LoginController.loginPath,
            let encoded = request.uri.description.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
        else {
            return ""
        }
        return "?next=" + encoded
    }

    /// What an error from below the portal means for a person (through the same mapping as the REST routes).
    private static func portalError(_ error: any Error, context: Context) -> PortalError {
        if let error = error as? any HTTPResponseError, !(error is HubError), error.status == .notFound {
            return PortalError.notFound("This page")
        }
        let hubError = HubError.mapping(error, logger: context.logger)
        switch hubError.status {
        case .serviceUnavailable where hubError.code == .writeOutcomeUnknown:
            return PortalError(
                status: .serviceUnavailable, title: "The database did not confirm in time",
                message: "This may or may not have been saved. Go back and send the same form "
                    + "again: a message is never sent twice from one form.", headers: hubError.headers)
        case .serviceUnavailable:
            return PortalError(
                status: .serviceUnavailable, title: "The database is unavailable",
                message: "Nothing was changed. Try again in a moment.", headers: hubError.headers)
        case .notFound:
            return PortalError(status: .notFound, title: "Not found", message: hubError.message)
        case .conflict:
            return PortalError(status: .conflict, title: "Already exists", message: hubError.message)
        case .internalServerError:
            return PortalError(
                status: .internalServerError, title: "Something went wrong",
                message: "The hub could not show this page. Try again; if it keeps happening, "
                    + "tell your administrator.")
        default:
            return PortalError(status: hubError.status, title: "This cannot be done", message: hubError.message)
        }
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

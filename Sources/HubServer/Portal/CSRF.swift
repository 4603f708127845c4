import Foundation
import HubCore
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Random secrets for the portal: session ids and CSRF tokens.
enum PortalSecret {
    /// 256 random bits from the system's generator, base64url without padding (43 characters, cookie-safe).
    static func make() -> String {
        Secret.make()
    }

    /// Whether `secret` could be one `make()` made (so junk never reaches the database).
    static func isWellFormed(_ secret: String) -> Bool {
        secret.utf8.count == 43
            && secret.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            }
    }

    /// The key a session is stored under: SHA-256 of its secret, so a leaked `sessions` collection opens no session.
    static func storageKey(_ secret: String) -> String {
        Secret.hash(secret)
    }

}

/// Reads every portal POST's form and refuses it (403) unless it carries the right CSRF token: the session's
/// token, or on the login form (before any session) the token of the login cookie (double submit).
struct CSRFMiddleware: RouterMiddleware {
    typealias Context = PortalRequestContext
    /// The field every form carries its token in.
    static let field = "_csrf"
    /// The cookie the login form's token is also set in.
    static let loginCookie = "msi_login_csrf"

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard request.method == .post else { return try await next(request, context) }
        let contentType = request.headers[.contentType] ?? ""
        // A form with a file (a roster's CSV) comes as multipart/form-data, with a larger limit.
        let boundary = MultipartForm.boundary(contentType: contentType)
        guard boundary != nil || contentType.lowercased().hasPrefix("application/x-www-form-urlencoded") else {
            throw PortalError(
                status: .unsupportedMediaType, title: "Unsupported form",
                message: "Portal forms are sent as application/x-www-form-urlencoded "
                    + "(or multipart/form-data with a file).")
        }
        let limit = boundary == nil ? context.maxUploadSize : MultipartForm.maximumSize
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw PortalError(
                status: .contentTooLarge, title: "Too much text",
                message: "The form is larger than \(limit / 1024) KiB.")
        } catch {
            throw PortalError(
                status: .badRequest, title: "Incomplete form",
                message: "The form arrived incomplete. Send it again.")
        }
        var context = context
        let form: PortalForm
        if let boundary {
            guard let fields = MultipartForm.fields(of: Array(buffer: body), boundary: boundary) else {
                throw PortalError(
                    status: .badRequest, title: "Incomplete form",
                    message: "The form arrived incomplete. Send it again.")
            }
            form = PortalForm(fields: fields)
        } else {
            form = PortalForm(urlencoded: String(buffer: body))
        }
        let expected: String?
        if request.uri.path == LoginController.loginPath {
            expected = request.cookies[Self.loginCookie]?.value
        } else {
            guard let user = context.user else { throw PortalError.loginRequired }
            expected = user.csrfToken
        }
        guard let expected, let given = form[Self.field], Secret.constantTimeEquals(expected, given) else {
            context.logger.notice(
                "portal form refused: missing or wrong CSRF token", metadata: ["path": "\(request.uri.path)"])
            throw PortalError.csrf
        }
        context.form = form
        return try await next(request, context)
    }
}

import DAO
import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore

/// The portal's pages: mustache templates from the bundle (`Resources/portal/templates`), HTML-escaped unless a
/// template says otherwise, rendered into responses.
struct PortalPages: Sendable {
    let library: MustacheLibrary

    /// The templates shipped with the hub, parsed once.
    /// - Throws: when a template is missing or does not parse (a packaging bug).
    static func bundled() throws -> PortalPages { try cached.get() }

    private static let cached: Result<PortalPages, any Error> = Result {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("portal/templates") else {
            throw PortalError(
                status: .internalServerError, title: "Broken installation",
                message: "The portal's templates are missing.")
        }
        var templates: [String: MustacheTemplate] = [:]
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for file in files where file.hasSuffix(".mustache") {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            templates[String(file.dropLast(".mustache".count))] = try MustacheTemplate(string: text)
        }
        return PortalPages(library: MustacheLibrary(templates: templates))
    }

    /// The page `template` rendered with `data` (plus the layout's `page` chrome), as an HTML response.
    func render(
        _ template: String, _ data: [String: Any], status: HTTPResponse.Status = .ok,
        headers: HTTPFields = [:]
    ) -> Response {
        let html = library.render(data, withTemplate: template) ?? "<!doctype html><title>Missing page</title>"
        var headers = headers
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }
}

extension PortalRequestContext {
    /// The data every page's layout uses: its title, the user and their CSRF token, and a notice to show.
    func page(_ title: String, _ data: [String: Any] = [:], notice: String? = nil) -> [String: Any] {
        var page: [String: Any] = ["title": title]
        if let user {
            page["user"] = ["name": user.username, "isAdmin": user.isAdmin, "role": user.role.rawValue]
            page["csrf"] = user.csrfToken
        }
        if let notice { page["notice"] = notice }
        var data = data
        data["page"] = page
        return data
    }
}

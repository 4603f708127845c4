import DAO
import Foundation
import HubCore
import Hummingbird
import Mongo

/// The admins' audit page: the audit log newest first, narrowed by actor, action prefix, target and a start day, a
/// page at a time, read through `AuditLog` (the chain itself is checked by `msi-hub audit verify`).
struct AuditAdminController {
    let services: HubServices
    let pages: PortalPages

    /// Entries shown on one page.
    static let pageSize = 50

    /// The page on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        admins.get("/audit", use: audit)
    }

    /// GET /portal/admin/audit?actor=&action=&target=&since=&before=: a page of entries matching the filters.
    @Sendable func audit(request: Request, context: PortalRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        func value(_ name: String) -> String? {
            guard let text = query.get(name)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return String(text.prefix(256))
        }
        var errors: [String: String] = [:]
        let since = value("since").flatMap { text in
            let milliseconds = Self.milliseconds(text)
            if milliseconds == nil {
                errors["since"] = "Enter a day (2026-11-26), a time in RFC 3339 or Unix milliseconds."
            }
            return milliseconds
        }
        let filter = AuditFilter(
            actor: value("actor"), actionPrefix: value("action"), target: value("target"), since: since)
        let before = value("before").flatMap { Int64($0) }
        let page = try await services.audit.entries(filter, before: before, limit: Self.pageSize)
        let rows: [[String: Any]] = page.entries.map { entry in
            [
                "seq": entry.seq, "time": PortalTime.text(milliseconds: entry.at),
                "actorKind": entry.actor.kind.rawValue,
                "actor": entry.actor.name, "action": entry.action, "targetKind": entry.target.kind,
                "target": entry.target.id, "change": entry.change.map { $0.extendedJSON(.relaxed) } ?? "",
                "hasChange": entry.change != nil, "hash": String(entry.hash.prefix(12)),
            ]
        }
        let values = [
            "actor": value("actor") ?? "", "action": value("action") ?? "", "target": value("target") ?? "",
            "since": value("since") ?? "",
        ]
        var data: [String: Any] = [
            "rows": rows, "isEmpty": rows.isEmpty, "values": values, "errors": errors,
            "filtered": values.values.contains { !$0.isEmpty },
        ]
        if let next = page.next {
            var items = values.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }.map {
                URLQueryItem(name: $0.key, value: $0.value)
            }
            items.append(URLQueryItem(name: "before", value: String(next)))
            var components = URLComponents()
            components.path = "/portal/admin/audit"
            components.queryItems = items
            data["older"] = components.string
        }
        return pages.render(
            "admin-audit", context.page("Audit log", data),
            status: errors.isEmpty ? .ok : .unprocessableContent)
    }

    /// A start time as Unix milliseconds: a day (UTC), an RFC 3339 time or Unix milliseconds; nil for anything else.
    static func milliseconds(_ text: String) -> Int64? {
        if let milliseconds = Int64(text), milliseconds >= 0 { return milliseconds }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        let time = ISO8601DateFormatter()
        guard let date = time.date(from: text) ?? day.date(from: text) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}

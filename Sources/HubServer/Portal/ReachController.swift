import DAO
import HubCore
import Hummingbird
import Mongo

/// The reach report on the portal's message page: shown with the page, then kept up to date by `reach.js`, which
/// polls `GET /portal/messages/:msiKey/reach` (the report as `GET /message/:msiKey/receipts` answers it, for the
/// session's user). `ReceiptService.report` holds the rules, including who may see a message's report.
struct ReachController {
    let services: HubServices

    /// How many devices not answered the page lists.
    static let silentShown = 50
    /// How often the page's script asks again, in milliseconds.
    static let pollMilliseconds = 2_500

    /// The route on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/messages/:msiKey/reach", use: reach)
    }

    /// GET /portal/messages/:msiKey/reach: the report as JSON; a message the user may not see (or none) is a JSON 404,
    /// as the API answers it, so that the page's script never reads an error page.
    @Sendable func reach(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        guard let msiKey = context.parameters.get("msiKey").flatMap(ObjectID.init(hex:)),
            let report = try await report(msiKey: msiKey, user: user)
        else {
            return JSONResponse.make(
                ["error": ["code": "message_not_found", "message": "no such message"]],
                status: .notFound)
        }
        return JSONResponse.make(.document(ReceiptController.document(report)))
    }

    /// The report of `msiKey` for `user`, its first `silentShown` devices not answered; nil when the user may not
    /// see it.
    func report(msiKey: ObjectID, user: PortalUser) async throws -> ReceiptReport? {
        do {
            return try await services.receipts.report(
                msiKey: msiKey, for: .caller(user.identity), cursor: nil,
                limit: Self.silentShown)
        } catch let error as DAOError where error.code == .messageNotFound {
            return nil
        }
    }

    /// The page's data of the report (the template `sent-one` renders it, the script updates it in place); nil
    /// when it cannot be read, so that the page shows without it.
    func pageData(msiKey: ObjectID, user: PortalUser) async -> [String: Any]? {
        guard let report = try? await report(msiKey: msiKey, user: user) else { return nil }
        let counts = report.counts
        var data: [String: Any] = [
            "url": "/portal/messages/\(msiKey.hex)/reach", "poll": Self.pollMilliseconds,
            "audience": report.audience, "fcmAccepted": report.fcmAccepted,
            "received": counts.byEvent[.received] ?? 0, "opened": counts.byEvent[.opened] ?? 0,
            "acknowledged": counts.byEvent[.acknowledged] ?? 0, "notAnswered": report.notAnswered,
            "unreachable": report.unreachable, "more": report.next != nil,
        ]
        data["responses"] = counts.responses.sorted { $0.key < $1.key }.map { ["text": $0.key, "count": $0.value] }
        data["platforms"] = report.platforms.sorted { $0.key.rawValue < $1.key.rawValue }.map { platform, reach in
            [
                "name": platform.rawValue, "audience": reach.audience, "received": reach.received,
                "opened": reach.opened, "acknowledged": reach.acknowledged,
            ] as [String: Any]
        }
        data["silent"] = report.silent.map { silent in
            ["device": silent.device.hex, "person": silent.person ?? "", "platform": silent.platform.rawValue]
        }
        data["noneSilent"] = report.silent.isEmpty
        return data
    }
}

import DAO
import HubCore
import Hummingbird
import Mongo

/// Two-person approval over REST: approve or reject a held message, and list what the caller may approve
/// (`ApprovalService`; the rule is `ApprovalPolicy`'s).
struct ApprovalController {
    let services: HubServices

    /// The routes on `senders` (admins and communicators; an API token is refused by the service).
    func addRoutes(to senders: RouterGroup<HubRequestContext>) {
        senders.post("/message/:msiKey/approve", use: approve)
        senders.post("/message/:msiKey/reject", use: reject)
        senders.get("/approvals", use: list)
    }

    /// POST /message/:msiKey/approve: another person who may send there approves; the message is sent now (or at its
    /// `send_at`). 403 `approval_self`, `approval_needs_user`, `approval_access_denied`; 409 `approval_not_pending`,
    /// `approval_expired`.
    @Sendable func approve(request: Request, context: HubRequestContext) async throws -> Response {
        let message = try await services.approvals.approve(msiKey: try context.parameters.objectID("msiKey"),
                                                           as: try context.caller())
        return JSONResponse.make(.document(MessageVisibility.withState(message, .approved).document))
    }

    /// POST /message/:msiKey/reject `{"reason": string}`: the message is never sent; refusals as `approve`, and 422
    /// `reason_required` for an empty reason.
    @Sendable func reject(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let msiKey = try context.parameters.objectID("msiKey")
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let reason = try fields.string("reason", maxLength: MessageService.maximumOverrideReason)
        let message = try await services.approvals.reject(msiKey: msiKey, reason: reason, as: identity)
        return JSONResponse.make(.document(MessageVisibility.withState(message, .rejected).document))
    }

    /// GET /approvals: the held messages the caller may approve (never its own), oldest request first, and for
    /// admins the overridden messages to review: `{"awaiting": [...], "overridden": [...]}`.
    @Sendable func list(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let awaiting = try await services.approvals.awaiting(for: identity)
            .map { BSONValue.document(MessageVisibility.withState($0, .awaitingApproval).document) }
        let overridden = try await services.approvals.overridesToReview(for: identity).map { BSONValue.document($0.document) }
        return JSONResponse.make(.document(["awaiting": .array(awaiting), "overridden": .array(overridden)]))
    }
}

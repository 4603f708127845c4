import DAO
import Foundation
import HubCore
import Hummingbird
import Mongo

/// Two-person approval over REST: approve or reject a held message, and list what the caller may approve
/// (`ApprovalService`; the rule is `ApprovalPolicy`'s).
struct ApprovalController {
    let services: HubServices

    /// The routes on `senders` (admins and communicators; an API token is refused by the service) and the approval
    /// rules on `admins`.
    func addRoutes(to senders: RouterGroup<HubRequestContext>, admins: RouterGroup<HubRequestContext>) {
        senders.post("/message/:msiKey/approve", use: approve)
        senders.post("/message/:msiKey/reject", use: reject)
        senders.get("/approvals", use: list)
        admins.get("/settings/approval", use: settings)
        admins.put("/settings/approval", use: updateSettings)
    }

    /// POST /message/:msiKey/approve `{"version": n}` (or `If-Match: "n"`): another person who may send there approves
    /// version n of the text awaiting approval (`approval.version`); a held message is sent now (or at its `send_at`),
    /// a correction of an approved message goes to the phones. 403 `approval_self`, `approval_needs_user`,
    /// `approval_access_denied`; 409 `approval_not_pending`, `approval_expired`, `approval_stale` (another version
    /// awaits); 422 `version_required`.
    @Sendable func approve(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let msiKey = try context.parameters.objectID("msiKey")
        let version = try await Self.version(of: request, context: context)
        let message = try await EditRefusalMapping.mapped {
            try await services.approvals.approve(msiKey: msiKey, version: version, as: identity)
        }
        return JSONResponse.make(.document(MessageVisibility.withState(message, .approved).document))
    }

    /// The version an approval names: `version` in a JSON body, else the `If-Match` header (`"3"` or `3`); nil when
    /// neither names one (the service refuses it, `version_required`, once it checked who asks).
    /// - Throws: `HubError` 422 `invalid_field` for a bad one.
    static func version(of request: Request, context: HubRequestContext) async throws -> Int64? {
        if request.headers[.contentType] != nil {
            var request = request
            let fields = FieldReader(document: try await request.jsonObject(context: context))
            if let version = try fields.optionalInteger("version", in: 1...Int64(Int32.max)) { return version }
        }
        if let header = request.headers[.ifMatch] {
            let text = header.trimmingCharacters(in: .whitespaces).trimmingCharacters(
                in: CharacterSet(charactersIn: "\""))
            guard let version = Int64(text), version >= 1 else {
                throw HubError.invalid(.invalidField, "If-Match must name the version approved, such as \"1\"")
            }
            return version
        }
        return nil
    }

    /// GET /settings/approval (admins): the rules in force, `{"defaults", "group_size", "timeout_seconds"}`.
    @Sendable func settings(request: Request, context: HubRequestContext) async throws -> Response {
        JSONResponse.make(.document(Self.document(try await services.approvals.settings())))
    }

    /// PUT /settings/approval (admins) `{"defaults"?, "group_size"?, "timeout_seconds"?}`: changes the rules every
    /// replica applies (the fields not given stay); 200 with the rules in force. 422 `settings_invalid` out of range.
    @Sendable func updateSettings(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let allowed: Set = ["defaults", "group_size", "timeout_seconds"]
        if let unknown = fields.document.elements.map(\.key).first(where: { !allowed.contains($0) }) {
            throw HubError.invalid(
                .invalidField,
                "the approval settings have no field \"\(unknown)\" (\(allowed.sorted().joined(separator: ", ")))")
        }
        var policy = try await services.approvals.settings()
        if let value = fields.document["defaults"] {
            guard let defaults = value.boolValue else {
                throw HubError.invalid(.invalidField, "the field \"defaults\" must be true or false")
            }
            policy.defaults = defaults
        }
        if let size = try fields.optionalInteger("group_size", in: ApprovalPolicy.groupSizes) {
            policy.groupSize = size
        }
        if let seconds = try fields.optionalInteger("timeout_seconds", in: ApprovalPolicy.timeoutSeconds) {
            policy.timeout = .seconds(seconds)
        }
        try await services.approvals.updateSettings(policy, as: identity)
        return JSONResponse.make(.document(Self.document(try await services.approvals.settings())))
    }

    /// The rules as the API shows them.
    static func document(_ policy: ApprovalPolicy) -> BSONDocument {
        [
            "defaults": .bool(policy.defaults), "group_size": .int64(policy.groupSize),
            "timeout_seconds": .int64(policy.timeout.components.seconds),
        ]
    }

    /// POST /message/:msiKey/reject `{"reason": string}`: the message is never sent; refusals as `approve`, and 422
    /// `reason_required` for an empty reason.
    @Sendable func reject(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let msiKey = try context.parameters.objectID("msiKey")
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let reason = try fields.string("reason", maxLength: MessageService.maximumOverrideReason)
        let message = try await EditRefusalMapping.mapped {
            try await services.approvals.reject(msiKey: msiKey, reason: reason, as: identity)
        }
        return JSONResponse.make(.document(MessageVisibility.withState(message, .rejected).document))
    }

    /// GET /approvals: the held messages and corrections (`pending_correction`, on a message whose `state` is
    /// approved) the caller may approve (never its own), oldest request first, and for admins the overridden messages
    /// to review: `{"awaiting": [...], "overridden": [...]}`.
    @Sendable func list(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let now = services.now()
        let awaiting = try await services.approvals.awaiting(for: identity).map { message in
            BSONValue.document(
                MessageVisibility.withState(
                    message, ApprovalState.of(message, now: now) ?? .awaitingApproval
                ).document)
        }
        let overridden = try await services.approvals.overridesToReview(for: identity).map {
            BSONValue.document($0.document)
        }
        return JSONResponse.make(.document(["awaiting": .array(awaiting), "overridden": .array(overridden)]))
    }
}

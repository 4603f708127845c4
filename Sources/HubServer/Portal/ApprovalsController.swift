import DAO
import HubCore
import HTTPTypes
import HubModel
import Hummingbird
import Mongo

/// The approvals page: the held messages the user may approve (never their own), shown as the phones will show them
/// (title, notification text, message, urgency), with approve and reject (with a reason) buttons; for admins also the
/// overridden messages to review. The rules are `ApprovalService`'s, as over REST.
struct ApprovalsController {
    let services: HubServices
    let pages: PortalPages

    /// The routes on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/approvals", use: list)
        users.post("/approvals/:msiKey/approve", use: approve)
        users.post("/approvals/:msiKey/reject", use: reject)
        users.post("/approvals/:msiKey/reviewed", use: reviewed)
    }

    /// What a `done` query names, for the notice after a decision.
    private static let notices = [
        "approved": "The message was approved: it goes to the phones within moments.",
        "rejected": "The message was rejected: it will never be sent.",
        "reviewed": "The override was marked reviewed.",
    ]

    /// GET /portal/approvals[?done=]
    @Sendable func list(request: Request, context: PortalRequestContext) async throws -> Response {
        let notice = request.uri.queryParameters.get("done").flatMap { Self.notices[$0] }
        return try await page(context: context, notice: notice)
    }

    /// POST /portal/approvals/:msiKey/approve
    @Sendable func approve(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let msiKey = try Self.msiKey(context)
        // The version the page showed: what the approver read is what is approved, or nothing is.
        guard let version = Int64(context.form.trimmed("version")) else {
            return try await page(
                context: context, error: "Reload the page: it did not say which version you approve.",
                status: .unprocessableContent)
        }
        do {
            _ = try await services.approvals.approve(msiKey: msiKey, version: version, as: user.identity)
        } catch let refusal as ApprovalRefusal {
            let text =
                refusal.code == .stale
                ? "The text changed since you read it: read the new version below, then decide." : refusal.message
            return try await page(context: context, error: text, status: HubError(refusal).status)
        } catch let refusal as EditRefusal {
            return try await page(context: context, error: refusal.message, status: .conflict)
        }
        return .redirect(to: "/portal/approvals?done=approved")
    }

    /// POST /portal/approvals/:msiKey/reject (`reason`)
    @Sendable func reject(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let msiKey = try Self.msiKey(context)
        do {
            _ = try await services.approvals.reject(
                msiKey: msiKey, reason: context.form.trimmed("reason"),
                as: user.identity)
        } catch let refusal as ApprovalRefusal {
            let text = refusal.code == .reasonRequired ? "Say why you reject the message." : refusal.message
            return try await page(context: context, error: text, status: HubError(refusal).status)
        }
        return .redirect(to: "/portal/approvals?done=rejected")
    }

    /// POST /portal/approvals/:msiKey/reviewed (admins)
    @Sendable func reviewed(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        try context.requireRole([.admin])
        _ = try await services.approvals.markReviewed(
            msiKey: try Self.msiKey(context),
            as: user.identity)
        return .redirect(to: "/portal/approvals?done=reviewed")
    }

    private func page(
        context: PortalRequestContext, notice: String? = nil, error: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let user = try context.loggedInUser()
        let cube = try await services.cube.cache.snapshot()
        let awaiting = try await services.approvals.awaiting(for: user.identity)
        let overridden = try await services.approvals.overridesToReview(for: user.identity)
        let groupNames = await SendRecipients.groupNames(of: awaiting + overridden, services: services)
        func row(_ message: Message) -> [String: Any] {
            var row = MessageRow.make(message, location: cube.topics[message.topicKey], groupNames: groupNames)
            row["urgency"] = message.urgency.rawValue
            row["hasDesc"] = !message.desc.isEmpty
            let approval = message.document["approval"]?.documentValue
            row["requestedBy"] = approval?["requested_by"]?.stringValue ?? message.sender
            row["expires"] = (approval?["expires_at"]?.int64Value).map { PortalTime.text(milliseconds: $0) } ?? ""
            row["reasons"] = (approval?["reasons"]?.arrayValue ?? []).compactMap(\.stringValue)
                .map(Self.reasonText).joined(separator: "; ")
            row["version"] = ApprovalDAO.version(of: message)
            // A correction of an approved message: the texts asked for, beside what the phones show now.
            if let pending = message.document["pending_correction"]?.documentValue,
                ApprovalState.of(message, now: services.now()) == .approved
            {
                let fields = pending["fields"]?.documentValue ?? [:]
                row["isCorrection"] = true
                row["title"] = fields["title"]?.stringValue ?? message.title
                row["desc"] = fields["desc"]?.stringValue ?? message.desc
                row["hasDesc"] = !(fields["desc"]?.stringValue ?? message.desc).isEmpty
                row["message"] = fields["message"]?.stringValue ?? message.message
                row["approvedTitle"] = message.title
                row["approvedMessage"] = message.message
                row["requestedBy"] = pending["requested_by"]?.stringValue ?? ""
                row["expires"] = (pending["expires_at"]?.int64Value).map { PortalTime.text(milliseconds: $0) } ?? ""
                row["reasons"] = "a correction of a message that needed approval"
            }
            if let override = message.document["override"]?.documentValue {
                row["overrideBy"] = override["by"]?.stringValue ?? ""
                row["overrideReason"] = override["reason"]?.stringValue ?? ""
                row["overrideAt"] = (override["at"]?.int64Value).map { PortalTime.text(milliseconds: $0) } ?? ""
            }
            return row
        }
        var data: [String: Any] = [
            "awaiting": awaiting.map(row), "overridden": overridden.map(row),
            "noneAwaiting": awaiting.isEmpty, "isAdmin": user.isAdmin,
            "noneOverridden": overridden.isEmpty,
        ]
        if let error { data["error"] = error }
        return pages.render("approvals", context.page("Approvals", data, notice: notice), status: status)
    }

    /// The path's message key.
    /// - Throws: `PortalError.notFound` when it is not one.
    static func msiKey(_ context: PortalRequestContext) throws -> ObjectID {
        guard let msiKey = context.parameters.get("msiKey").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This message")
        }
        return msiKey
    }

    /// Why a message waits, in words.
    static func reasonText(_ reason: String) -> String {
        switch ApprovalPolicy.Reason(rawValue: reason) {
        case .forcedSubject?: "every phone has its subject (Forced)"
        case .critical?: "its urgency is critical"
        case .largeGroup?: "it goes to a large group"
        case .markedRequired?: "its subject, area or channel needs approval"
        case nil: reason
        }
    }
}

import HTTPTypes
import HubCore
import Hummingbird

/// The admins' settings page: the approval rules every replica applies (`ApprovalService.updateSettings`), on or off,
/// the audience size past which a group send needs approval, and how long a request waits. The rules are stored in
/// the database, so a change holds on every replica within a second and is in the audit log (`settings.approval`).
struct SettingsAdminController {
    let services: HubServices
    let pages: PortalPages

    /// The routes on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        admins.get("/settings", use: show)
        admins.post("/settings/approval", use: updateApproval)
    }

    /// GET /portal/admin/settings[?done=saved]
    @Sendable func show(request: Request, context: PortalRequestContext) async throws -> Response {
        let policy = try await services.approvals.settings()
        let notice = request.uri.queryParameters.get("done") == "saved" ? "The approval rules are saved." : nil
        return try page(context: context, values: Self.values(policy), notice: notice)
    }

    /// POST /portal/admin/settings/approval (`defaults` on/absent, `group_size`, `timeout_minutes`)
    @Sendable func updateApproval(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let form = context.form
        var errors: [String: String] = [:]
        var policy = try await services.approvals.settings()
        policy.defaults = form["defaults"] == "on"
        if let size = Int64(form.trimmed("group_size")), ApprovalPolicy.groupSizes.contains(size) {
            policy.groupSize = size
        } else {
            errors["group_size"] = "Enter a number of persons from 1 to 10,000,000."
        }
        if let minutes = Int64(form.trimmed("timeout_minutes")),
            ApprovalPolicy.timeoutSeconds.contains(minutes * 60)
        {
            policy.timeout = .seconds(minutes * 60)
        } else {
            errors["timeout_minutes"] = "Enter minutes from 1 to 10,080 (seven days)."
        }
        guard errors.isEmpty else {
            let values = [
                "defaults": policy.defaults ? "on" : "", "group_size": form.trimmed("group_size"),
                "timeout_minutes": form.trimmed("timeout_minutes"),
            ]
            return try page(context: context, values: values, errors: errors, status: .unprocessableContent)
        }
        try await services.approvals.updateSettings(policy, as: user.identity)
        return .redirect(to: "/portal/admin/settings?done=saved")
    }

    /// The form's values for `policy`.
    static func values(_ policy: ApprovalPolicy) -> [String: String] {
        [
            "defaults": policy.defaults ? "on" : "", "group_size": String(policy.groupSize),
            "timeout_minutes": String(policy.timeout.components.seconds / 60),
        ]
    }

    private func page(
        context: PortalRequestContext, values: [String: String], errors: [String: String] = [:],
        notice: String? = nil, status: HTTPResponse.Status = .ok
    ) throws -> Response {
        let data: [String: Any] = ["values": values, "errors": errors, "defaultsOn": values["defaults"] == "on"]
        return pages.render("admin-settings", context.page("Settings", data, notice: notice), status: status)
    }
}

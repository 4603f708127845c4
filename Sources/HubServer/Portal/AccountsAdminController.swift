import DAO
import HubCore
import HTTPTypes
import Hummingbird
import Logging
import Mongo

/// The admin pages of accounts: users (add, disable and enable, reset the password, change the role, give or take
/// the right `direct`) and API tokens (create, with the secret shown once and optionally the right `direct`; revoke).
struct AccountsAdminController {
    let services: HubServices
    let pages: PortalPages

    /// The pages on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        admins.get("/users", use: users)
        admins.post("/users", use: addUser)
        admins.post("/users/:userID/disable") { try await setDisabled(true, $0, $1) }
        admins.post("/users/:userID/enable") { try await setDisabled(false, $0, $1) }
        admins.post("/users/:userID/password", use: resetPassword)
        admins.post("/users/:userID/role", use: setRole)
        admins.post("/users/:userID/direct", use: setDirect)
        admins.get("/tokens", use: tokens)
        admins.post("/tokens", use: createToken)
        admins.post("/tokens/:tokenID/revoke", use: revokeToken)
    }

    // MARK: Users

    /// GET /portal/admin/users
    @Sendable func users(request: Request, context: PortalRequestContext) async throws -> Response {
        let notice = request.uri.queryParameters.get("done").flatMap { Self.userNotices[$0] }
        return try await usersPage(context: context, notice: notice)
    }

    /// POST /portal/admin/users: adds a user with a new password, shown once.
    @Sendable func addUser(request: Request, context: PortalRequestContext) async throws -> Response {
        var entry = NameAndRole(context.form, nameField: "username")
        let username = entry.name
        guard entry.errors.isEmpty, let role = entry.role else {
            return try await usersPage(context: context, values: entry.values, errors: entry.errors)
        }
        let password: String
        do {
            password = try await services.accounts.addUser(username, role: role, direct: entry.direct)
        } catch let refusal as AccountRefusal where refusal.code == .nameTaken {
            entry.errors["username"] = "A user or a live API token is called \(username) already."
            return try await usersPage(context: context, values: entry.values, errors: entry.errors)
        }
        return pages.render(
            "secret",
            context.page(
                "User added",
                [
                    "heading": "\(username) can now log in", "label": "Password of \(username)", "secret": password,
                    "advice": "Give this password to \(username). It is shown only now; if it is lost, reset it.",
                    "backURL": "/portal/admin/users", "backLabel": "Back to the users",
                ]))
    }

    /// Disables or re-enables a user; disabling ends their sessions at once.
    func setDisabled(_ disabled: Bool, _ request: Request, _ context: PortalRequestContext) async throws -> Response {
        let admin = try context.loggedInUser()
        let username = try await existingUser(context).username
        do {
            try await services.accounts.setDisabled(username, disabled, by: admin.username)
        } catch let refusal as AccountRefusal where refusal.code == .selfLockout {
            return try await usersPage(context: context, problem: "You cannot disable yourself.")
        }
        return .redirect(to: "/portal/admin/users?done=" + (disabled ? "disabled" : "enabled"))
    }

    /// Gives a user a new password, shown once, and ends their sessions.
    @Sendable func resetPassword(request: Request, context: PortalRequestContext) async throws -> Response {
        let admin = try context.loggedInUser()
        let username = try await existingUser(context).username
        let password = try await services.accounts.resetPassword(of: username, by: admin.username)
        return pages.render(
            "secret",
            context.page(
                "Password reset",
                [
                    "heading": "New password for \(username)", "label": "Password of \(username)", "secret": password,
                    "advice": "The old password no longer works. This one is shown only now.",
                    "backURL": "/portal/admin/users", "backLabel": "Back to the users",
                ]))
    }

    /// Changes a user's role; their sessions end so the new role applies to a fresh login.
    @Sendable func setRole(request: Request, context: PortalRequestContext) async throws -> Response {
        let admin = try context.loggedInUser()
        let username = try await existingUser(context).username
        guard let role = Role(rawValue: context.form.trimmed("role")) else {
            return try await usersPage(context: context, problem: "Choose admin or communicator.")
        }
        do {
            try await services.accounts.setRole(of: username, to: role, by: admin.username)
        } catch let refusal as AccountRefusal where refusal.code == .selfLockout {
            return try await usersPage(context: context, problem: "You cannot take the admin role from yourself.")
        }
        return .redirect(to: "/portal/admin/users?done=role")
    }

    /// Gives or takes the right `direct` (the form's `direct` checkbox); it applies to the user's next page or call.
    @Sendable func setDirect(request: Request, context: PortalRequestContext) async throws -> Response {
        let username = try await existingUser(context).username
        let direct = context.form["direct"] != nil
        try await services.accounts.setDirect(of: username, to: direct)
        return .redirect(to: "/portal/admin/users?done=" + (direct ? "direct" : "indirect"))
    }

    private func existingUser(_ context: PortalRequestContext) async throws -> User {
        let id = context.parameters.get("userID").flatMap(ObjectID.init(hex:))
        guard let id, let user = try await services.accounts.users().first(where: { $0.id == id }) else {
            throw PortalError.notFound("This user")
        }
        return user
    }

    private func usersPage(
        context: PortalRequestContext, values: [String: String] = [:], errors: [String: String] = [:],
        problem: String? = nil, notice: String? = nil
    ) async throws -> Response {
        let me = context.user?.username
        let rows: [[String: Any]] = try await services.accounts.users().map { user in
            [
                "username": user.username, "role": user.role.rawValue, "disabled": user.disabled, "direct": user.direct,
                "provider": user.signsInWithProvider, "providerDisabled": user.disabledByProvider,
                "isMe": user.username == me, "created": PortalTime.text(milliseconds: user.createdAt),
                "roles": Role.allCases.map { ["value": $0.rawValue, "selected": $0 == user.role] },
                "path": "/portal/admin/users/\(user.id.hex)",
            ]
        }
        let chosenRole = values["role"] ?? Role.communicator.rawValue
        var data: [String: Any] = [
            "users": rows, "values": values, "errors": errors, "hasErrors": !errors.isEmpty,
            "roles": Role.allCases.map { ["value": $0.rawValue, "selected": $0.rawValue == chosenRole] },
        ]
        if let problem { data["problem"] = problem }
        let status: HTTPResponse.Status = errors.isEmpty && problem == nil ? .ok : .unprocessableContent
        return pages.render("admin-users", context.page("Users", data, notice: notice), status: status)
    }

    private static let userNotices = [
        "disabled": "The user was disabled and logged out.", "enabled": "The user can log in again.",
        "role": "The role was changed.",
        "direct": "The user may now message persons directly.",
        "indirect": "The user may no longer message persons directly.",
    ]

    // MARK: Tokens

    /// GET /portal/admin/tokens
    @Sendable func tokens(request: Request, context: PortalRequestContext) async throws -> Response {
        let notice = request.uri.queryParameters.get("done") == "revoked" ? "The token was revoked." : nil
        return try await tokensPage(context: context, notice: notice)
    }

    /// POST /portal/admin/tokens: a new token, its secret shown once.
    @Sendable func createToken(request: Request, context: PortalRequestContext) async throws -> Response {
        var entry = NameAndRole(context.form, nameField: "name")
        let name = entry.name
        guard entry.errors.isEmpty, let role = entry.role else {
            return try await tokensPage(context: context, values: entry.values, errors: entry.errors)
        }
        let secret: String
        do {
            // A token made in the portal acts for the admin who made it (the approval rule's "same person").
            secret = try await services.accounts.createToken(
                name: name, role: role, direct: entry.direct,
                owner: try context.loggedInUser().identity.name)
        } catch let refusal as AccountRefusal where refusal.code == .nameTaken {
            entry.errors["name"] = "A user or a live token is called \(name) already."
            return try await tokensPage(context: context, values: entry.values, errors: entry.errors)
        }
        return pages.render(
            "secret",
            context.page(
                "Token created",
                [
                    "heading": "The token “\(name)”", "label": "Secret of \(name)", "secret": secret,
                    "advice":
                        "Copy it into the script's configuration now: it is shown only this once. Scripts send it as "
                        + "“Authorization: Bearer …”.",
                    "backURL": "/portal/admin/tokens", "backLabel": "Back to the tokens",
                ]))
    }

    /// POST /portal/admin/tokens/:tokenID/revoke: the token stops working at once.
    @Sendable func revokeToken(request: Request, context: PortalRequestContext) async throws -> Response {
        guard let id = context.parameters.get("tokenID").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This token")
        }
        do {
            try await services.accounts.revokeToken(id.hex)
        } catch let refusal as AccountRefusal where refusal.code == .tokenNotFound {
            throw PortalError.notFound("This token")
        }
        return .redirect(to: "/portal/admin/tokens?done=revoked")
    }

    private func tokensPage(
        context: PortalRequestContext, values: [String: String] = [:], errors: [String: String] = [:],
        notice: String? = nil
    ) async throws -> Response {
        let rows: [[String: Any]] = try await services.accounts.tokens().map { token in
            var row: [String: Any] = [
                "id": token.id.hex, "name": token.name, "role": token.role.rawValue, "direct": token.direct,
                "created": PortalTime.text(milliseconds: token.createdAt),
                "lastUsed": token.lastUsedAt.map { PortalTime.text(milliseconds: $0) } ?? "never",
            ]
            if let revoked = token.revokedAt { row["revoked"] = PortalTime.text(milliseconds: revoked) }
            return row
        }
        let chosenRole = values["role"] ?? Role.communicator.rawValue
        let data: [String: Any] = [
            "tokens": rows, "isEmpty": rows.isEmpty, "values": values, "errors": errors, "hasErrors": !errors.isEmpty,
            "roles": Role.allCases.map { ["value": $0.rawValue, "selected": $0.rawValue == chosenRole] },
        ]
        return pages.render(
            "admin-tokens", context.page("API tokens", data, notice: notice),
            status: errors.isEmpty ? .ok : .unprocessableContent)
    }
}

/// The name and role of the add-user and create-token forms, read and checked alike.
private struct NameAndRole {
    let nameField: String
    let name: String
    let roleText: String
    let role: Role?
    /// Whether the "may message persons directly" box is ticked (the right `direct`).
    let direct: Bool
    /// Problems by field name, shown next to the field.
    var errors: [String: String] = [:]

    init(_ form: PortalForm, nameField: String) {
        self.nameField = nameField
        self.name = form.trimmed(nameField)
        self.roleText = form.trimmed("role")
        self.role = Role(rawValue: roleText)
        self.direct = form["direct"] != nil
        if let problem = AccountService.nameProblem(name) { errors[nameField] = problem }
        if role == nil { errors["role"] = "Choose a role." }
    }

    /// The values to show again in the form ("direct" present when its box was ticked).
    var values: [String: String] {
        var values = [nameField: name, "role": roleText]
        if direct { values["direct"] = "on" }
        return values
    }
}

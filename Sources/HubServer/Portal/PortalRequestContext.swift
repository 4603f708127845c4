import DAO
import HTTPTypes
import HubCore
import Hummingbird

/// The context of a portal request: Hummingbird's core, the logged-in user and the submitted form.
struct PortalRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The user of the request's session, set by `PortalSessionMiddleware`; nil when not logged in.
    var user: PortalUser?
    /// A POST's form fields, read by `CSRFMiddleware` once their CSRF token checked out.
    var form = PortalForm()
    /// Why the session could not be read (the database is unavailable), if it could not.
    var sessionFailure: (any Error)?
    /// Who sent the request (`HubRequestContext.clientAddress`: the peer, or the client a trusted proxy names).
    let clientAddress: ClientAddress?

    init(context: HubRequestContext) throws {
        self.coreContext = context.coreContext
        self.clientAddress = context.clientAddress
    }

    /// Forms are small: the longest field is a 1,500-character message.
    var maxUploadSize: Int { 64 * 1024 }

    /// The logged-in user of a page in a `RequireRole` group, which let only logged-in users through.
    /// - Throws: `PortalError.loginRequired` when there is none: only a page outside such a group can meet that (a
    ///   programmer error, answered as to an anonymous visitor).
    func loggedInUser() throws -> PortalUser {
        guard let user else { throw PortalError.loginRequired }
        return user
    }
}

extension PortalRequestContext: RoleCheckedContext {
    /// - Throws: the database's error when the session could not be read; `PortalError.loginRequired` (a redirect to
    ///   the login page) when nobody is logged in; `.adminOnly` (403) for a user of another role (the only role a
    ///   page can lack is the admin's: every user may use the others).
    func requireRole(_ roles: [Role]) throws {
        if let sessionFailure { throw sessionFailure }
        guard let user else { throw PortalError.loginRequired }
        guard roles.contains(user.role) else { throw PortalError.adminOnly }
    }
}

/// Who is logged in to the portal, and their session.
struct PortalUser: Sendable {
    var username: String
    var role: Role
    /// Whether the user has the right `direct` (to send to persons directly), as stored now.
    var direct: Bool = false
    /// The session's CSRF token, which every form carries.
    var csrfToken: String
    /// The stored key of the session (a hash of the cookie's secret).
    var sessionKey: String
    /// The id_token of a sign-in through the OpenID provider, for the provider's sign-out.
    var providerIDToken: String? = nil

    /// The identity messages are sent as, with the same rights as the user's API calls.
    var identity: Identity { Identity(name: username, role: role, kind: .user, direct: direct) }
    var isAdmin: Bool { role == .admin }
}

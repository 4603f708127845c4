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

    /// The logged-in user.
    /// - Throws: `PortalError.loginRequired` (a redirect to the login page) when nobody is logged in; the
    ///   database's error when the session could not be read.
    func requireUser() throws -> PortalUser {
        if let sessionFailure { throw sessionFailure }
        guard let user else { throw PortalError.loginRequired }
        return user
    }

    /// The logged-in user, who must be an admin.
    /// - Throws: `PortalError.loginRequired`, or `.adminOnly` (403) for a communicator.
    func requireAdmin() throws -> PortalUser {
        let user = try requireUser()
        guard user.role == .admin else { throw PortalError.adminOnly }
        return user
    }
}

/// Who is logged in to the portal, and their session.
struct PortalUser: Sendable {
    var username: String
    var role: Role
    /// The session's CSRF token, which every form carries.
    var csrfToken: String
    /// The stored key of the session (a hash of the cookie's secret).
    var sessionKey: String

    /// The identity messages are sent as, with the same rights as the user's API calls.
    var identity: Identity { Identity(name: username, role: role, kind: .user) }
    var isAdmin: Bool { role == .admin }
}

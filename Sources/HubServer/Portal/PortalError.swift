import HTTPTypes
import Hummingbird

/// A failure shown to a portal user as a page (or, for `loginRequired`, a redirect to the login page).
struct PortalError: Error, Sendable {
    var status: HTTPResponse.Status
    /// The page's heading.
    var title: String
    /// What happened and what to do next, for a person.
    var message: String
    var headers: HTTPFields = [:]

    /// Nobody is logged in: the page middleware redirects to the login page.
    static let loginRequired = PortalError(
        status: .unauthorized, title: "Please log in", message: "Log in to see this page.")

    /// A communicator opened an admin page.
    static let adminOnly = PortalError(
        status: .forbidden, title: "Admins only",
        message: "This page is for administrators. Ask an administrator of your school if you need a change here.")

    /// A form came without the token of this session.
    static let csrf = PortalError(
        status: .forbidden, title: "This form cannot be accepted",
        message: "The form did not carry this session's security token (it may be old, or come from another site). "
            + "Go back, reload the page and try again.")

    /// A page that does not exist, or that this user may not see.
    static func notFound(_ what: String) -> PortalError {
        PortalError(status: .notFound, title: "Not found", message: "\(what) does not exist (any more).")
    }
}

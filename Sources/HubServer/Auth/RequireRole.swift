import DAO
import Hummingbird

/// A request context that knows its caller's role, so that `RequireRole` can guard a group of routes with it.
protocol RoleCheckedContext: RequestContext {
    /// Lets the request on when its caller has one of `roles`.
    /// - Throws: the context's answer to an anonymous caller (the API's 401, the portal's redirect to log in) or to
    ///   a caller of another role (403).
    func requireRole(_ roles: [Role]) throws
}

/// States a route group's role once: every route added to the group after it answers only callers of one of
/// `roles` (`router.group().add(middleware: RequireRole(.admin))`), so no handler checks a role itself.
///
/// It runs before the handler reads anything of the request (path, query or body), so a caller without the role
/// learns nothing else from the answer.
struct RequireRole<Context: RoleCheckedContext>: RouterMiddleware {
    /// The roles the group's routes take, in the order a 403's message names them.
    let roles: [Role]

    init(_ roles: Role...) {
        precondition(!roles.isEmpty, "a group needs at least one role")
        self.roles = roles
    }

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        try context.requireRole(roles)
        return try await next(request, context)
    }
}

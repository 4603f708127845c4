import DAO
import Hummingbird

/// States the role of routes that a device also calls with its secret (a room's manager from their phone, a member
/// leaving): a request carrying a device secret goes on to the handler, which checks it against the device and what
/// its person may do (`RoomService`); any other needs one of `roles`, as `RequireRole` asks.
struct RequireRoleOrDevice: RouterMiddleware {
    typealias Context = HubRequestContext
    let roles: [Role]

    init(_ roles: Role...) {
        precondition(!roles.isEmpty, "a group needs at least one role")
        self.roles = roles
    }

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if context.deviceSecret == nil { try context.requireRole(roles) }
        return try await next(request, context)
    }
}

import DAO
import Foundation
import HTTPTypes
import HubCore
import Hummingbird

/// Reads `Authorization` (Bearer API token, or Basic username:password) into the context's identity; a device's
/// secret (`Bearer msd_...`) is kept for the device routes, which check it against the device they name.
///
/// Requests without the header pass through anonymous; routes that need a caller are in a `RequireRole` group.
/// Credentials that are given but wrong are refused at once (401). A Bearer value that is neither an API token
/// (`msi_`) nor a device secret is no credential of a caller: it passes through anonymous, for the route that takes
/// it (`/metrics` and its `METRICS_TOKEN`). A password goes through the login policy (`AccountService.logIn`), as
/// the portal's form does: past the failure limits 429 with `Retry-After` and no bcrypt, 503 `busy` when the
/// password checks are full.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let accounts: AccountService

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let header = request.headers[.authorization] else { return try await next(request, context) }
        var context = context
        if let secret = Self.deviceSecret(header) {
            context.deviceSecret = secret
        } else if !Self.isOtherBearer(header) {
            context.identity = try await identity(header, context: context)
        }
        guard let caller = context.identity else { return try await next(request, context) }
        // The audit log records what the services do for this request as done by the caller.
        return try await AuditActor.$current.withValue(AuditActor(caller)) { try await next(request, context) }
    }

    /// Whether the header is a Bearer value other than an API token (a device secret is taken before).
    private static func isOtherBearer(_ header: String) -> Bool {
        let parts = header.split(separator: " ", maxSplits: 1)
        return parts.count == 2 && parts[0].lowercased() == "bearer"
            && !String(parts[1]).trimmingSpaces.hasPrefix("msi_")  // every API token starts with this
    }

    /// The device secret a `Bearer msd_...` header carries.
    private static func deviceSecret(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let value = String(parts[1]).trimmingSpaces
        return value.hasPrefix(DeviceService.secretPrefix) ? value : nil
    }

    /// The caller a Bearer token or Basic username and password names.
    /// - Throws: `HubError.unauthenticated`; `LoginRefusal` from the login policy (mapped once, in `HubError`).
    private func identity(_ header: String, context: Context) async throws -> Identity {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { throw HubError.unauthenticated }
        let scheme = parts[0].lowercased()
        let value = String(parts[1]).trimmingSpaces
        if scheme == "bearer", let identity = try await accounts.credentials.identity(token: value) {
            return identity
        }
        if scheme == "basic", let data = Data(base64Encoded: value),
            let decoded = String(data: data, encoding: .utf8),
            let separator = decoded.firstIndex(of: ":")
        {
            let username = String(decoded[..<separator])
            let password = String(decoded[decoded.index(after: separator)...])
            return try await accounts.logIn(
                username: username, password: password, from: context.clientAddress,
                logger: context.logger)
        }
        throw HubError.unauthenticated
    }
}

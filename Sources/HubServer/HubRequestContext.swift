import DAO
import HubCore
import Hummingbird
import NIOCore

/// The per-request context: Hummingbird's core, plus who is calling.
public struct HubRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated caller, set by `AuthMiddleware`; nil for anonymous requests. Routes that need one are in a
    /// `RequireRole` group and read it with `caller()`.
    public var identity: Identity?
    /// A device's secret (`Authorization: Bearer msd_...`), checked by the device routes.
    public var deviceSecret: String?
    /// Who sent the request, as the throttles count it: the TCP peer, which `ClientAddressMiddleware` replaces
    /// with the client a trusted proxy names (`TRUSTED_PROXIES`); nil when the channel has no IP peer.
    public var clientAddress: ClientAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = CoreRequestContextStorage(source: source)
        self.identity = nil
        self.deviceSecret = nil
        self.clientAddress = source.channel.remoteAddress?.ipAddress.flatMap { ClientAddress($0) }
    }

    /// Request bodies are read up to this size (larger ones get 413).
    public var maxUploadSize: Int { 64 * 1024 }
}

extension HubRequestContext: RoleCheckedContext {
    /// - Throws: `HubError` 401 for an anonymous caller, 403 for a caller of another role.
    func requireRole(_ roles: [Role]) throws {
        guard let identity else { throw HubError.unauthenticated }
        guard roles.contains(identity.role) else {
            let names = roles.map(\.rawValue).joined(separator: " or ")
            throw HubError(.forbidden, .forbidden, "this needs the role \(names)")
        }
    }

    /// The caller of a route in a `RequireRole` group, which let only callers with a role through.
    /// - Throws: `HubError` 401 when there is none: only a route outside such a group can meet that (a programmer
    ///   error, answered as to an anonymous caller).
    func caller() throws -> Identity {
        guard let identity else { throw HubError.unauthenticated }
        return identity
    }
}

import HTTPTypes
import HubCore
import Hummingbird

/// Sets the context's client address from a trusted proxy's `X-Forwarded-For` (`TrustedProxies`); from any other
/// peer the header is ignored and the client is the peer.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let proxies: TrustedProxies

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let peer = context.clientAddress, proxies.trusts(peer) else { return try await next(request, context) }
        var context = context
        context.clientAddress = proxies.client(peer: peer, forwardedFor: request.headers[values: .xForwardedFor])
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    /// The addresses each proxy on the way saw the request come from, the client's first.
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

import HTTPTypes
import Hummingbird
import Synchronization

/// The methods each routed path answers, for 405 `Allow` (RFC 9110 §15.5.6): a request whose path the router
/// knows under other methods is not a 404.
///
/// Filled once from the router's routes when they are all added (`fill(from:)`); the error middleware, added
/// before the routes, reads it. A path resolves as the router's trie resolves it: per segment, a literal beats a
/// capture, which beats a wildcard.
final class AllowedMethods: Sendable {
    private struct Route {
        let components: [RouterPath.Element]
        let methods: Set<HTTPRequest.Method>
    }

    private let routes = Mutex<[Route]>([])

    /// Takes the routes of `router` (every GET also answers HEAD).
    func fill<Context>(from router: Router<Context>) {
        var byPath: [String: (components: [RouterPath.Element], methods: Set<HTTPRequest.Method>)] = [:]
        for route in router.routes {
            byPath[route.path.description, default: (Array(route.path.components), [])].methods.insert(route.method)
        }
        let routes = byPath.values.map { entry in
            Route(
                components: entry.components,
                methods: entry.methods.contains(.get) ? entry.methods.union([.head]) : entry.methods)
        }
        self.routes.withLock { $0 = routes }
    }

    /// The `Allow` value of `path`, methods in a fixed order; nil when no route has this path.
    func allow(path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        let best = routes.withLock { routes -> Route? in
            var best: (route: Route, rank: [Int])?
            for route in routes {
                guard let rank = Self.rank(route.components, segments) else { continue }
                if best.map({ $0.rank.lexicographicallyPrecedes(rank) }) ?? true { best = (route, rank) }
            }
            return best?.route
        }
        guard let best else { return nil }
        return Self.order.filter(best.methods.contains).map(\.rawValue).joined(separator: ", ")
    }

    private static let order: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]

    /// How specifically `components` match `segments` (per segment: 2 literal, 1 capture, 0 wildcard), or nil
    /// when they do not match.
    private static func rank(_ components: [RouterPath.Element], _ segments: [Substring]) -> [Int]? {
        var rank: [Int] = []
        for (index, component) in components.enumerated() {
            if component == RouterPath.Element.recursiveWildcard { return rank + [0] }
            guard index < segments.count, component ~= segments[index] else { return nil }
            let text = component.description
            rank.append(text.contains("{") ? 1 : text.contains("*") ? 0 : 2)
        }
        return components.count == segments.count ? rank : nil
    }
}

/// Answers a request for a path the router knows under other methods with 405 and `Allow`, not 404.
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowed: AllowedMethods

    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // Only the router's own "no route" is an `HTTPError`; the hub's 404s are `HubError`s.
            guard let allow = allowed.allow(path: request.uri.path) else { throw error }
            throw HubError(
                .methodNotAllowed, .methodNotAllowed,
                "\(request.method.rawValue) is not allowed here; this path allows \(allow)",
                headers: [.allow: allow])
        }
    }
}

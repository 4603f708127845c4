import HTTPTypes
import Hummingbird
import Logging

/// Gives every request an id that its log lines carry (`request_id`) and its response returns
/// (`X-Request-ID`): a caller's own id when it sends a sensible one, else the hub's.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    static var header: HTTPField.Name { HTTPField.Name("X-Request-ID")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let id = request.headers[Self.header].flatMap(Self.accepted) ?? context.id
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // ErrorMiddleware, further in, throws every failure as an HTTP error: answer it here, with the id.
            response = try error.response(from: request, context: context)
        }
        response.headers[Self.header] = id
        return response
    }

    /// A caller's id, if it is short and plain enough to log and echo.
    static func accepted(_ id: String) -> String? {
        guard (1...128).contains(id.utf8.count),
            id.utf8.allSatisfy({
                $0 == 45 || $0 == 46 || $0 == 95 || (48...57).contains($0)
                    || (65...90).contains($0) || (97...122).contains($0)
            })
        else { return nil }
        return id
    }
}

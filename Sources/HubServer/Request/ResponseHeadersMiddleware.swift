import HTTPTypes
import Hummingbird

/// Headers every response carries, whatever produced it: `X-Content-Type-Options: nosniff`, so no browser
/// takes a JSON error or a text body for HTML or script. (`CubeChannelHandler` adds the same to the answers it
/// gives on the network thread.)
struct ResponseHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        return response
    }
}

import Hummingbird

/// Turns every failure into the JSON error shape (`HubError.mapping`), so no client ever sees an unexplained 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            throw HubError.mapping(error, logger: context.logger)
        }
    }
}

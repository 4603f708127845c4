import DAO
import Hummingbird
import Logging
import Mongo

/// Turns every failure into the JSON error shape, so no client ever sees an unexplained 500.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HubError {
            throw error
        } catch let error as DAOError {
            if error.code == .unavailable || error.code == .database {
                context.logger.warning("database error", metadata: ["error": "\(error)"])
            }
            throw HubError(error)
        } catch let error as MongoError {
            context.logger.warning("database error", metadata: ["error": "\(error)"])
            throw HubError(DAOError(error))
        } catch let error as any HTTPResponseError {
            throw HubError(error.status, Self.code(for: error.status), Self.message(for: error.status))
        } catch {
            context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: error))"])
            throw HubError(.internalServerError, "internal_error", "the server failed to handle the request")
        }
    }

    private static func code(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .contentTooLarge: "body_too_large"
        case .badRequest: "bad_request"
        default: status.reasonPhrase.lowercased().split(separator: " ").joined(separator: "_")
        }
    }

    private static func message(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "no such route"
        case .contentTooLarge: "the request body is too large"
        default: status.reasonPhrase
        }
    }
}

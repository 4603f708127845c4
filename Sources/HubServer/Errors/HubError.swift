import DAO
import Hummingbird
import Mongo

/// An error answered to a client: a status and `{"error": {"code": ..., "message": ...}}`.
public struct HubError: HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    /// A snake_case code a client can switch on.
    public var code: String
    /// A sentence for a person.
    public var message: String
    /// Extra headers, such as `Retry-After` on a 503.
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: BSONDocument = ["error": ["code": .string(code), "message": .string(message)]]
        return JSONResponse.make(.document(body), status: status, headers: headers)
    }
}

extension HubError {
    /// 400: a path or query value that is not what it must be.
    static func badRequest(_ code: String, _ message: String) -> HubError { HubError(.badRequest, code, message) }

    /// 422: valid JSON whose content fails validation.
    static func invalid(_ code: String, _ message: String) -> HubError { HubError(.unprocessableContent, code, message) }

    /// 401: no credentials, or credentials that do not check out.
    static let unauthenticated = HubError(
        .unauthorized, "unauthenticated", "this request needs a user or an API token",
        headers: [.wwwAuthenticate: "Bearer realm=\"msi-hub\", Basic realm=\"msi-hub\""])

    /// 503: the database is out of reach; the client should retry shortly.
    static let databaseUnavailable = HubError(
        .serviceUnavailable, "database_unavailable", "the database is unavailable; try again shortly",
        headers: [.retryAfter: "2"])

    /// The answer a DAO failure becomes.
    init(_ error: DAOError) {
        switch error.code {
        case .channelNotFound: self.init(.notFound, "channel_not_found", error.message)
        case .areaNotFound: self.init(.notFound, "area_not_found", error.message)
        case .subjectNotFound: self.init(.notFound, "subject_not_found", error.message)
        case .topicNotFound: self.init(.notFound, "topic_not_found", error.message)
        case .messageNotFound: self.init(.notFound, "message_not_found", error.message)
        case .userNotFound: self.init(.notFound, "user_not_found", error.message)
        case .tokenNotFound: self.init(.notFound, "token_not_found", error.message)
        case .duplicate: self.init(.conflict, "conflict", error.message)
        case .unavailable: self = .databaseUnavailable
        default: self.init(.internalServerError, "internal_error", "the server failed to handle the request")
        }
    }
}

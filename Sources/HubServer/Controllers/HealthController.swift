import Foundation
import HubCore
import HubTime
import Hummingbird
import Mongo

/// Liveness and readiness for load balancers and orchestrators, and the API's own description.
struct HealthController {
    let services: HubServices

    func addRoutes(to router: Router<HubRequestContext>) {
        router.get("/healthz", use: healthz)
        router.get("/readyz", use: readyz)
        router.get("/openapi.json", use: openAPI)
    }

    /// The process is alive.
    @Sendable func healthz(request: Request, context: HubRequestContext) async throws -> Response {
        JSONResponse.make(["status": "ok"])
    }

    /// The database answers within the write deadline, and messages are being stored in time; 503 otherwise, so
    /// a load balancer sends traffic elsewhere (a hung database fails this within the deadline). The answer also
    /// says whether new messages are accepted (`messages`: the relay's backlog against `RELAY_MAX_BACKLOG_SECONDS`):
    /// a relay that is behind refuses POST /message on every replica alike (they share the backlog), so it does
    /// not make a replica unready, which would take the reads down with it.
    @Sendable func readyz(request: Request, context: HubRequestContext) async throws -> Response {
        guard !services.messages.writesStalled else { throw HubError.databaseUnavailable }
        do {
            let pool = services.pool
            try await withDeadline(.now.advanced(by: services.messages.writeDeadline)) { try await pool.ping() }
        } catch {
            throw HubError.databaseUnavailable
        }
        var answer: BSONDocument = ["status": "ready"]
        let backlog = services.relayBacklog
        if let age = await backlog.age() {
            answer["relay_backlog_seconds"] = .double(Double(age.milliseconds) / 1000)
        }
        if let refusal = await backlog.refusal() {
            answer["messages"] = "refused"
            answer["reason"] = .string(refusal.message)
        } else {
            answer["messages"] = "accepted"
        }
        return JSONResponse.make(.document(answer))
    }

    /// The OpenAPI 3.1 description of every route.
    @Sendable func openAPI(request: Request, context: HubRequestContext) async throws -> Response {
        JSONResponse.json(try OpenAPIDocument.bytes())
    }
}

/// The OpenAPI document shipped with the hub (Resources/openapi.json).
enum OpenAPIDocument {
    /// The document's bytes, read once.
    static func bytes() throws -> [UInt8] { try cached.get() }

    private static let cached: Result<[UInt8], any Error> = Result {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json") else {
            throw HubError(.internalServerError, .internalError, "the OpenAPI document is missing")
        }
        return Array(try Data(contentsOf: url))
    }
}

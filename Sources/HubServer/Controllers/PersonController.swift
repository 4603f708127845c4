import DAO
import HubCore
import Hummingbird
import Foundation
import HTTPTypes
import Mongo
import NIOCore

/// A person's devices, for admins: which phones are bound to a person, and unbinding one (a lost phone, a shared
/// tablet handed on). Persons are the school sign-in's ids; the hub stores nothing else of them.
struct PersonController {
    let services: HubServices

    /// Every route on `admins`, the group of admin-only routes.
    func addRoutes(to admins: RouterGroup<HubRequestContext>) {
        admins.get("/person/:personID/devices", use: devices)
        admins.delete("/person/:personID/devices/:deviceID", use: unbind)
        admins.get("/person/:personID/export", use: export)
        admins.head("/person/:personID/export", use: exportHead)
        admins.delete("/person/:personID", use: erase)
        admins.get("/person/:personID/erasure", use: erasure)
    }

    /// GET /person/:personID/export → 200, one JSON document of everything the hub holds on the person (their
    /// devices without registrations or secrets, groups, settings, messages to them, room posts, deliveries,
    /// receipts, acknowledgements, audit entries naming them), streamed a page at a time.
    @Sendable func export(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try Self.personID(context)
        let service = services.personData
        // A first read before the answer starts: a database out of reach is a 503, not a cut document.
        _ = try await service.erasure(of: person)
        let body = ResponseBody { writer in
            try await service.export(person) { text in try await writer.write(ByteBuffer(string: text)) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: Self.exportHeaders, body: body)
    }

    /// HEAD /person/:personID/export → GET's status and headers, without the document: its length is not known
    /// before it is written (streamed), so no Content-Length is given (RFC 9110 9.3.2), where the generated HEAD would
    /// say 0.
    @Sendable func exportHead(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try await services.personData.erasure(of: try Self.personID(context))
        return Response(
            status: .ok, headers: Self.exportHeaders, body: ResponseBody { writer in try await writer.finish(nil) })
    }

    /// The export's headers: JSON, a file to save, never cached.
    static let exportHeaders: HTTPFields = [
        .contentType: "application/json; charset=utf-8",
        .contentDisposition: "attachment; filename=\"person-export.json\"", .cacheControl: "no-store",
    ]

    /// DELETE /person/:personID[?posts=delete|anonymise] → 202 with the erasure job (`state` `running`) and its
    /// `Location`; the job unbinds and deletes their devices, takes them out of every group, deletes their settings,
    /// deliveries, receipts and responses, takes them out of messages' recipients and deletes or anonymises their
    /// room posts. Asking again while it runs answers the same job; 422 `invalid_query` for another `posts`.
    @Sendable func erase(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try Self.personID(context)
        let postsText = request.uri.queryParameters.get("posts").map { String($0) } ?? Erasure.Posts.delete.rawValue
        guard let posts = Erasure.Posts(rawValue: postsText) else {
            throw HubError.invalid(.invalidQuery, "posts: delete or anonymise")
        }
        let job = try await services.personData.erase(person, posts: posts)
        var response = JSONResponse.make(.document(Self.view(job)), status: .accepted)
        response.headers[.location] = "/person/\(Self.pathComponent(person))/erasure"
        return response
    }

    /// GET /person/:personID/erasure → 200 the erasure's progress (`state` `running`, then `done`); 404 `not_found`
    /// when the person was never erased.
    @Sendable func erasure(request: Request, context: HubRequestContext) async throws -> Response {
        guard let job = try await services.personData.erasure(of: try Self.personID(context)) else {
            throw HubError(.notFound, .notFound, "no erasure of this person is recorded")
        }
        return JSONResponse.make(.document(Self.view(job)))
    }

    /// An erasure as the API shows it: never the person id (the caller named it).
    static func view(_ job: Erasure) -> BSONDocument {
        var document: BSONDocument = [
            "state": .string(job.state.rawValue), "posts": .string(job.posts.rawValue),
            "step": .int64(Int64(min(job.step, PersonDataService.stepCount))),
            "steps": .int64(Int64(PersonDataService.stepCount)), "started_at": .int64(job.startedAt),
        ]
        if let finished = job.finishedAt { document["finished_at"] = .int64(finished) }
        if job.failures > 0 { document["failures"] = .int64(Int64(job.failures)) }
        if let error = job.lastError, job.state == .running { document["last_error"] = .string(error) }
        document["removed"] = .document(
            BSONDocument(job.counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: .int64($0.value)) }))
        return document
    }

    /// `person` percent-encoded for a path segment.
    static func pathComponent(_ person: String) -> String {
        person.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? person
    }

    /// GET /person/:personID/devices → 200 `{"devices": [{"device_id", "platform", "state", "created_at",
    /// "updated_at"}]}`, oldest first (empty for a person with none); never a registration or secret.
    @Sendable func devices(request: Request, context: HubRequestContext) async throws -> Response {
        let devices = try await services.devices.devices(ofPerson: try Self.personID(context))
        return JSONResponse.make(["devices": .array(devices.map { .document(services.devices.personView($0)) })])
    }

    /// DELETE /person/:personID/devices/:deviceID: unbinds the device from the person (204; recorded in the audit
    /// log as `device.unbind`); 404 `device_not_found` when no such device is bound to them.
    @Sendable func unbind(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try Self.personID(context)
        try await services.devices.unbind(try context.parameters.objectID("deviceID"), fromPerson: person)
        return Response(status: .noContent)
    }

    /// The path's person id, percent-decoded.
    /// - Throws: `HubError` 422 `invalid_id` for bad encoding or a length outside 1 to 256 characters.
    static func personID(_ context: HubRequestContext) throws -> String {
        let person = try GroupController.personID(context)
        guard (1...PersonAssertionVerifier.maximumPersonLength).contains(person.count) else {
            throw HubError.invalid(
                .invalidID,
                "personID: a person id has 1 to \(PersonAssertionVerifier.maximumPersonLength) characters")
        }
        return person
    }
}

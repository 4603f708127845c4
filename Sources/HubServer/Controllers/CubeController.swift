import DAO
import HubCore
import Hummingbird
import Metrics
import Mongo

/// The information cube: channels, areas and subjects (the spec's legacy routes plus channel CRUD); reads from
/// the copy in memory, writes through `CubeService`.
struct CubeController {
    let services: HubServices
    let answers: CubeAnswers
    /// Answers served from a copy the database had not confirmed lately.
    private let staleAnswers = Counter(label: "msi_cube_stale_answers_total")

    init(services: HubServices, answers: CubeAnswers) {
        self.services = services
        self.answers = answers
    }

    /// The reads on `router`, for everyone; the writes on `admins`.
    func addRoutes(to router: Router<HubRequestContext>, admins: RouterGroup<HubRequestContext>) {
        // Usually answered before the router, on the network thread (`CubeChannelHandler`).
        router.get("/channel", use: listChannels)
        router.head("/channel", use: listChannels)
        router.get("/channel/:channelID", use: getChannel)
        router.head("/channel/:channelID", use: getChannel)
        admins.post("/channel", use: addChannel)
        admins.put("/channel/:channelID", use: updateChannel)
        admins.delete("/channel/:channelID", use: deleteChannel)
        admins.post("/area/:channelID", use: addArea)
        admins.put("/area/:channelID/:areaID", use: updateArea)
        admins.delete("/area/:channelID/:areaID", use: deleteArea)
        admins.post("/subject/:channelID/:areaID", use: addSubject)
        admins.put("/subject/:channelID/:areaID/:subjectID", use: updateSubject)
        admins.delete("/subject/:channelID/:areaID/:subjectID", use: deleteSubject)
    }

    // MARK: Channels

    /// GET /channel: every icube document as stored, as the legacy hub served it; the `access` lists shown to
    /// admins only (`CubeVisibility`), empty for everyone else.
    @Sendable func listChannels(request: Request, context: HubRequestContext) async throws -> Response {
        let showingAccess = CubeVisibility.showsAccessLists(to: context.identity)
        return try await answer(request, showingAccess: showingAccess) { $0.all(showingAccess: showingAccess) }
            ?? JSONResponse.make(.array([]))
    }

    /// GET /channel/:channelID: one channel, from memory; from the database when another replica added it a
    /// moment ago.
    @Sendable func getChannel(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let showingAccess = CubeVisibility.showsAccessLists(to: context.identity)
        if let response = try await answer(
            request, showingAccess: showingAccess,
            { $0.channel(channelID, showingAccess: showingAccess) })
        {
            return response
        }
        let document = try await services.cube.channel(channelID).document
        return JSONResponse.make(.document(showingAccess ? document : CubeVisibility.redacted(document)))
    }

    /// The answer from the copy in memory, which never waits for the database once loaded: a copy the
    /// database has not confirmed lately is served with its age in `Age` (whole seconds) while it reloads. An
    /// answer showing the access lists is `private`: no shared cache keeps it for other callers.
    private func answer(
        _ request: Request, showingAccess: Bool,
        _ body: (CubeAnswers.Bodies) -> CachedBody?
    ) async throws -> Response? {
        let cache = services.cube.cache
        let snapshot = try await cache.snapshot()
        guard let bodies = answers.bodies(for: snapshot), let cached = body(bodies) else { return nil }
        var response = cached.response(to: request)
        if showingAccess { response.headers[.cacheControl] = "private, no-cache" }
        if !cache.freshness.isCurrent, let age = cache.freshness.ageSeconds {
            response.headers[.age] = String(Int(age))
            staleAnswers.increment()
        }
        return response
    }

    @Sendable func addChannel(request: Request, context: HubRequestContext) async throws -> Response {
        var request = request
        let draft = try ChannelDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let channel = try await services.cube.addChannel(draft)
        return JSONResponse.make(.document(channel.document), status: .created)
    }

    @Sendable func updateChannel(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        var request = request
        let draft = try ChannelDraft(FieldReader(document: try await request.jsonObject(context: context)))
        return JSONResponse.make(.document(try await services.cube.updateChannel(channelID, draft).document))
    }

    @Sendable func deleteChannel(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.cube.deleteChannel(try context.parameters.objectID("channelID"))
        return Response(status: .noContent)
    }

    // MARK: Areas

    @Sendable func addArea(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        var request = request
        let draft = try AreaDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let area = try await services.cube.addArea(channelID: channelID, draft)
        return JSONResponse.make(.document(area.document), status: .created)
    }

    @Sendable func updateArea(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        var request = request
        let draft = try AreaDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let area = try await services.cube.updateArea(channelID: channelID, areaID: areaID, draft)
        return JSONResponse.make(.document(area.document))
    }

    @Sendable func deleteArea(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        try await services.cube.deleteArea(channelID: channelID, areaID: areaID)
        return Response(status: .noContent)
    }

    // MARK: Subjects

    @Sendable func addSubject(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        var request = request
        let draft = try SubjectDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let subject = try await services.cube.addSubject(channelID: channelID, areaID: areaID, draft)
        return JSONResponse.make(.document(subject.document), status: .created)
    }

    @Sendable func updateSubject(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        let subjectID = try context.parameters.objectID("subjectID")
        var request = request
        let draft = try SubjectDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let subject = try await services.cube.updateSubject(
            channelID: channelID, areaID: areaID, subjectID: subjectID, draft)
        return JSONResponse.make(.document(subject.document))
    }

    @Sendable func deleteSubject(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        let subjectID = try context.parameters.objectID("subjectID")
        try await services.cube.deleteSubject(channelID: channelID, areaID: areaID, subjectID: subjectID)
        return Response(status: .noContent)
    }
}

// MARK: Request bodies

extension CubeElementDraft {
    /// `{"name": string, "desc": string, "access"?: [string], "approval"?: "required" | "default"}`
    init(_ fields: FieldReader) throws {
        self.init(
            name: try fields.string("name", maxLength: FieldLimits.name),
            desc: try fields.string("desc", maxLength: FieldLimits.desc),
            access: try fields.optionalUsernames("access"), approvalRequired: try fields.approvalMark())
    }
}

extension SubjectDraft {
    /// `{"name": string, "desc": string, "opt": {"level": ..., "distribution": ...}, "access"?: [string]}`
    init(_ fields: FieldReader) throws {
        let options = try fields.object("opt")
        self.init(
            name: try fields.string("name", maxLength: FieldLimits.name),
            desc: try fields.string("desc", maxLength: FieldLimits.desc),
            level: try fields.oneOf("level", in: options, path: "opt.level"),
            distribution: try fields.oneOf("distribution", in: options, path: "opt.distribution"),
            access: try fields.optionalUsernames("access"), approvalRequired: try fields.approvalMark())
    }
}

extension FieldReader {
    /// The body's `approval`: "required" (true), "default" (false: the approval policy's defaults); nil when absent.
    /// - Throws: `HubError` 422 `invalid_field` for any other value.
    func approvalMark() throws -> Bool? {
        guard let value = document["approval"], !value.isNull else { return nil }
        switch value.stringValue {
        case CubeApproval.required?: return true
        case CubeApproval.default?: return false
        default: throw HubError.invalid(.invalidField, "the field \"approval\" must be \"required\" or \"default\"")
        }
    }
}

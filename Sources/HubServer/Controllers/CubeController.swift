import DAO
import Hummingbird
import Logging
import Mongo

/// The information cube: channels, areas and subjects (the spec's legacy routes plus channel CRUD).
struct CubeController {
    let services: HubServices

    func addRoutes(to router: Router<HubRequestContext>) {
        // Usually answered before the router, on the network thread (`CubeChannelHandler`).
        router.get("/channel", use: listChannels)
        router.head("/channel", use: listChannels)
        router.get("/channel/:channelID", use: getChannel)
        router.head("/channel/:channelID", use: getChannel)
        router.post("/channel", use: addChannel)
        router.put("/channel/:channelID", use: updateChannel)
        router.delete("/channel/:channelID", use: deleteChannel)
        router.post("/area/:channelID", use: addArea)
        router.put("/area/:channelID/:areaID", use: updateArea)
        router.delete("/area/:channelID/:areaID", use: deleteArea)
        router.post("/subject/:channelID/:areaID", use: addSubject)
        router.put("/subject/:channelID/:areaID/:subjectID", use: updateSubject)
        router.delete("/subject/:channelID/:areaID/:subjectID", use: deleteSubject)
    }

    /// Makes a write visible to this process's next read at once; a failed reload leaves the write
    /// done and the follower catches up.
    private func refreshCube(_ context: HubRequestContext) async {
        do { try await services.cube.refresh() } catch {
            context.logger.warning("reloading the cube after a write failed", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Channels

    /// GET /channel: every icube document as stored, as the legacy hub served it.
    @Sendable func listChannels(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.cube.snapshot().all.response(to: request)
    }

    @Sendable func getChannel(request: Request, context: HubRequestContext) async throws -> Response {
        let channelID = try context.parameters.objectID("channelID")
        if let body = try await services.cube.snapshot().channels[channelID] {
            return body.response(to: request)
        }
        // Not in memory: a channel another replica added a moment ago is still found.
        return JSONResponse.make(.document(try await services.channels.get(channelID).document))
    }

    @Sendable func addChannel(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        var request = request
        let draft = try ChannelDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let channel = try await services.channels.add(draft)
        await refreshCube(context)
        return JSONResponse.make(.document(channel.document), status: .created)
    }

    @Sendable func updateChannel(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        var request = request
        let draft = try ChannelDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let channel = try await services.channels.update(channelID, draft)
        await refreshCube(context)
        return JSONResponse.make(.document(channel.document))
    }

    @Sendable func deleteChannel(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        try await services.channels.delete(try context.parameters.objectID("channelID"))
        await refreshCube(context)
        return Response(status: .noContent)
    }

    // MARK: Areas

    @Sendable func addArea(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        var request = request
        let draft = try AreaDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let area = try await services.areas.add(channelID: channelID, draft)
        await refreshCube(context)
        return JSONResponse.make(.document(area.document), status: .created)
    }

    @Sendable func updateArea(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        var request = request
        let draft = try AreaDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let area = try await services.areas.update(channelID: channelID, areaID: areaID, draft)
        await refreshCube(context)
        return JSONResponse.make(.document(area.document))
    }

    @Sendable func deleteArea(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        try await services.areas.delete(channelID: channelID, areaID: areaID)
        await refreshCube(context)
        return Response(status: .noContent)
    }

    // MARK: Subjects

    @Sendable func addSubject(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        var request = request
        let draft = try SubjectDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let subject = try await services.subjects.add(channelID: channelID, areaID: areaID, draft)
        await refreshCube(context)
        return JSONResponse.make(.document(subject.document), status: .created)
    }

    @Sendable func updateSubject(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        let subjectID = try context.parameters.objectID("subjectID")
        var request = request
        let draft = try SubjectDraft(FieldReader(document: try await request.jsonObject(context: context)))
        let subject = try await services.subjects.update(channelID: channelID, areaID: areaID, subjectID: subjectID, draft)
        await refreshCube(context)
        return JSONResponse.make(.document(subject.document))
    }

    @Sendable func deleteSubject(request: Request, context: HubRequestContext) async throws -> Response {
        _ = try context.require(.admin)
        let channelID = try context.parameters.objectID("channelID")
        let areaID = try context.parameters.objectID("areaID")
        let subjectID = try context.parameters.objectID("subjectID")
        try await services.subjects.delete(channelID: channelID, areaID: areaID, subjectID: subjectID)
        await refreshCube(context)
        return Response(status: .noContent)
    }
}

// MARK: Request bodies

extension CubeElementDraft {
    /// `{"name": string, "desc": string, "access"?: [string]}`
    init(_ fields: FieldReader) throws {
        self.init(name: try fields.string("name", maxLength: FieldLimits.name),
                  desc: try fields.string("desc", maxLength: FieldLimits.desc),
                  access: try fields.optionalUsernames("access"))
    }
}

extension SubjectDraft {
    /// `{"name": string, "desc": string, "opt": {"level": ..., "distribution": ...}, "access"?: [string]}`
    init(_ fields: FieldReader) throws {
        let options = try fields.object("opt")
        self.init(name: try fields.string("name", maxLength: FieldLimits.name),
                  desc: try fields.string("desc", maxLength: FieldLimits.desc),
                  level: try fields.oneOf("level", in: options, path: "opt.level"),
                  distribution: try fields.oneOf("distribution", in: options, path: "opt.distribution"),
                  access: try fields.optionalUsernames("access"))
    }
}

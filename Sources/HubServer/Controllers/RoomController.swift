import DAO
import HubCore
import Hummingbird
import Mongo

/// Rooms (`RoomService`): a member's device posts to a group that lets members post and reads its history; a
/// manager's device adds and removes members and withdraws posts; a member leaves a group that lets them. Each device
/// request carries the device's secret (`Authorization: Bearer msd_...`), which names the device; admins read a
/// group's history and manage members with their own credentials.
struct RoomController {
    let services: HubServices

    /// The routes: device-only ones on `router`, the ones admins share on `adminsOrDevices`.
    func addRoutes(to router: Router<HubRequestContext>, adminsOrDevices: RouterGroup<HubRequestContext>) {
        router.post("/group/:groupID/messages", use: post)
        router.delete("/group/:groupID/messages/:msiKey", use: withdraw)
        adminsOrDevices.get("/group/:groupID/messages", use: history)
        adminsOrDevices.put("/group/:groupID/members/:personID", use: addMember)
        adminsOrDevices.delete("/group/:groupID/members/:personID", use: removeMember)
    }

    /// POST /group/:groupID/messages `{"title"?, "message", "data"?}` with a member's device secret → 201 with the
    /// message, sent to every other member's devices (never the author's); 403 `not_a_member`,
    /// `posting_not_allowed`; 429 with `Retry-After` past `ROOM_POSTS_PER_MINUTE`.
    @Sendable func post(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await services.devices.authenticate(secret: context.deviceSecret)
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        let title = try fields.optionalString("title", maxLength: MessageField.title.maxLength)
        let text = try fields.string("message", maxLength: MessageField.message.maxLength, allowEmpty: false)
        let message = try await services.rooms.post(
            title: title, message: text, data: try MessageController.data(fields),
            to: try GroupController.groupID(context), from: device)
        return JSONResponse.make(.document(message.document), status: .created)
    }

    /// GET /group/:groupID/messages?cursor=&limit= (a member's device, or an admin) → a page of the group's
    /// messages, newest first, and `next_cursor`.
    @Sendable func history(request: Request, context: HubRequestContext) async throws -> Response {
        let parameters = try PageParameters(request.uri.queryParameters)
        let id = try GroupController.groupID(context)
        let page: MessagePage
        if context.deviceSecret != nil {
            let device = try await services.devices.authenticate(secret: context.deviceSecret)
            page = try await services.rooms.history(
                of: id, for: device, after: parameters.after, limit: parameters.limit)
        } else {
            page = try await services.rooms.history(of: id, after: parameters.after, limit: parameters.limit)
        }
        return PageParameters.response(page)
    }

    /// DELETE /group/:groupID/messages/:msiKey (`?reason=` optional) with the device secret of the post's author or
    /// a manager of the room → 200 with the message as stored (`withdrawn`); the phones it reached are told.
    @Sendable func withdraw(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await services.devices.authenticate(secret: context.deviceSecret)
        let msiKey = try context.parameters.objectID("msiKey")
        let reason = request.uri.queryParameters.get("reason")
        if let reason, reason.utf8.count > MessageEditController.maximumReason {
            throw HubError.invalid(
                .fieldTooLong, "the reason is longer than \(MessageEditController.maximumReason) bytes")
        }
        let message = try await EditRefusalMapping.mapped {
            try await services.rooms.withdraw(
                post: msiKey, in: try GroupController.groupID(context), by: device, reason: reason)
        }
        return JSONResponse.make(.document(message.document))
    }

    /// PUT /group/:groupID/members/:personID (an admin, or a manager's device) → 201 added, 200 a member already.
    @Sendable func addMember(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try GroupController.personID(context)
        let id = try GroupController.groupID(context)
        let (group, added) =
            if context.deviceSecret != nil {
                try await services.rooms.add(
                    person, to: id, by: try await services.devices.authenticate(secret: context.deviceSecret))
            } else {
                try await services.groups.add(person, to: id)
            }
        return JSONResponse.make(.document(GroupController.document(group)), status: added ? .created : .ok)
    }

    /// DELETE /group/:groupID/members/:personID (an admin; a manager's device; the member's own device when the group
    /// lets members leave) → 204; 404 when not a member.
    @Sendable func removeMember(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try GroupController.personID(context)
        let id = try GroupController.groupID(context)
        if context.deviceSecret != nil {
            try await services.rooms.remove(
                person, from: id, by: try await services.devices.authenticate(secret: context.deviceSecret))
        } else {
            try await services.groups.remove(person, from: id)
        }
        return Response(status: .noContent)
    }
}

import DAO
import Foundation
import HubCore
import Hummingbird
import Mongo

/// Groups of persons, managed by admins: a roster sync replaces a whole group in one call (`PUT /group/:groupID`),
/// single members come and go, and the members are read a page at a time. `GroupService` holds every rule.
struct GroupController {
    let services: HubServices

    /// The largest body of `PUT /group/:groupID`: 10,000 person ids of typical length (about 30 bytes each with their
    /// quotes) take some 300 KiB; this route alone reads bodies up to 2 MiB.
    static let maximumRosterBody = 2 * 1024 * 1024
    /// How many entries a page (of a group's members, of the groups) holds unless `limit` says otherwise.
    static let defaultPage = 500

    /// Every route on `admins`, the group of admin-only routes.
    func addRoutes(to admins: RouterGroup<HubRequestContext>) {
        admins.get("/group", use: list)
        admins.get("/group/:groupID", use: get)
        admins.put("/group/:groupID", use: replace)
        admins.delete("/group/:groupID", use: delete)
        admins.get("/group/:groupID/members", use: members)
        // Adding and removing one member: `RoomController`, which a room's managers call from their devices too.
    }

    /// PUT /group/:groupID `{"name", "members", "access"?}`: creates (201) or replaces (200) the group.
    @Sendable func replace(request: Request, context: HubRequestContext) async throws -> Response {
        let id = try Self.groupID(context)
        var request = request
        let fields = FieldReader(
            document: try await request.jsonObject(context: context, maxSize: Self.maximumRosterBody))
        let name = try fields.string("name")
        let members = try Self.strings(fields.document, "members", required: true) ?? []
        let access = try Self.strings(fields.document, "access", required: false) ?? []
        let (group, created) = try await services.groups.replace(
            id: id, name: name, members: members, access: access, room: try Self.roomSettings(fields.document))
        return JSONResponse.make(.document(Self.document(group)), status: created ? .created : .ok)
    }

    /// GET /group?cursor=&limit=: a page of groups, by id, and the next page's cursor (null on the last page).
    @Sendable func list(request: Request, context: HubRequestContext) async throws -> Response {
        let (after, limit) = try Self.page(of: request)
        let page = try await services.groups.page(after: after, limit: limit)
        return JSONResponse.make([
            "groups": .array(page.groups.map { .document(Self.document($0)) }),
            "next": page.next.map { .string(Self.cursor(after: $0)) } ?? .null,
        ])
    }

    /// GET /group/:groupID: its name, member count and access.
    @Sendable func get(request: Request, context: HubRequestContext) async throws -> Response {
        JSONResponse.make(.document(Self.document(try await services.groups.group(id: try Self.groupID(context)))))
    }

    /// DELETE /group/:groupID: the group and its members (204).
    @Sendable func delete(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.groups.delete(id: try Self.groupID(context))
        return Response(status: .noContent)
    }

    /// GET /group/:groupID/members?cursor=&limit=: a page of person ids, sorted, and the next page's cursor (null on
    /// the last page).
    @Sendable func members(request: Request, context: HubRequestContext) async throws -> Response {
        let (after, limit) = try Self.page(of: request)
        let page = try await services.groups.members(of: try Self.groupID(context), after: after, limit: limit)
        return JSONResponse.make([
            "members": .array(page.persons.map(BSONValue.string)),
            "next": page.next.map { .string(Self.cursor(after: $0)) } ?? .null,
        ])
    }

    // MARK: Reading and writing

    /// The group as the API shows it.
    static func document(_ group: Group) -> BSONDocument {
        [
            "id": .string(group.id), "name": .string(group.name), "member_count": .int64(group.memberCount),
            "access": .array(group.access.map(BSONValue.string)), "updated_at": .int64(group.updatedAt),
            "posting": .string(group.posting.rawValue), "managers": .array(group.managers.map(BSONValue.string)),
            "self_leave": .bool(group.selfLeave),
        ]
    }

    /// The body's room settings: `posting` ("staff" or "members"), `managers` (person ids), `self_leave` (a
    /// boolean), each optional; one left out keeps what the group has (a roster sync that knows nothing of rooms
    /// leaves them as they are).
    /// - Throws: `HubError` 422 `invalid_field` naming the field.
    static func roomSettings(_ document: BSONDocument) throws -> Group.RoomSettings {
        var settings = Group.RoomSettings()
        if let value = document["posting"], !value.isNull {
            guard let posting = value.stringValue.flatMap(Group.Posting.init(rawValue:)) else {
                throw HubError.invalid(.invalidField, "the field \"posting\" must be \"staff\" or \"members\"")
            }
            settings.posting = posting
        }
        settings.managers = try strings(document, "managers", required: false)
        if let value = document["self_leave"], !value.isNull {
            guard let selfLeave = value.boolValue else {
                throw HubError.invalid(.invalidField, "the field \"self_leave\" must be true or false")
            }
            settings.selfLeave = selfLeave
        }
        return settings
    }

    /// The path's group id (checked by `GroupService` before any query).
    static func groupID(_ context: HubRequestContext) throws -> String {
        guard let id = context.parameters.get("groupID") else {
            throw HubError.badRequest(.invalidID, "groupID is missing")
        }
        return id.removingPercentEncoding ?? id
    }

    /// The path's person id, percent-decoded (an e-mail address or any printable id travels encoded).
    static func personID(_ context: HubRequestContext) throws -> String {
        guard let id = context.parameters.get("personID") else {
            throw HubError.badRequest(.invalidID, "personID is missing")
        }
        guard let decoded = id.removingPercentEncoding else {
            throw HubError.invalid(.invalidID, "personID: not valid percent-encoding")
        }
        return decoded
    }

    /// An array of strings at `key` (types only: `GroupService` checks the values); nil when absent and optional.
    /// - Throws: `HubError` 422 naming the field.
    static func strings(_ document: BSONDocument, _ key: String, required: Bool) throws -> [String]? {
        guard let value = document[key], !value.isNull else {
            if required { throw HubError.invalid(.missingField, "the field \"\(key)\" is required") }
            return nil
        }
        guard let array = value.arrayValue else {
            throw HubError.invalid(.invalidField, "the field \"\(key)\" must be an array of strings")
        }
        return try array.enumerated().map { index, element in
            guard let string = element.stringValue else {
                throw HubError.invalid(.invalidField, "the field \"\(key)[\(index)]\" must be a string")
            }
            return string
        }
    }

    /// The opaque cursor of the page after the person or group `id`: the id in base64url.
    static func cursor(after id: String) -> String {
        Data(id.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The page a listing asks for: the id its `cursor` stands for (nil: the first page) and its `limit`.
    /// - Throws: `HubError` 400 `invalid_query` for a limit out of range or a cursor this server did not give.
    static func page(of request: Request) throws -> (after: String?, limit: Int) {
        let query = request.uri.queryParameters
        let limit = try PageQuery.limit(query, default: Self.defaultPage, maximum: GroupService.maximumPage)
        return (try PageQuery.cursor(query, Self.id(cursor:)), limit)
    }

    /// The id (of a person or a group) a cursor stands for, or nil when it is not one `cursor(after:)` made.
    static func id(cursor: String) -> String? {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let id = String(data: data, encoding: .utf8) else { return nil }
        return id
    }
}

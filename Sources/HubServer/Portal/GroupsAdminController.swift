import DAO
import Foundation
import HubCore
import HTTPTypes
import Hummingbird

/// The admin pages of groups: the groups with their member counts, a group's members (a page at a time) and access,
/// and a roster imported from a CSV file, which replaces the members through `GroupService.replace` (the call of
/// `PUT /group/:groupID`).
struct GroupsAdminController {
    let services: HubServices
    let pages: PortalPages

    /// Members shown on one page of a group.
    static let pageSize = 100

    /// The pages on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        admins.get("/groups", use: groups)
        admins.post("/groups", use: importNew)
        admins.get("/groups/:groupID", use: group)
        admins.post("/groups/:groupID/import", use: importRoster)
    }

    // MARK: Pages

    /// GET /portal/admin/groups: every group with its member count, and the form that imports a roster.
    @Sendable func groups(request: Request, context: PortalRequestContext) async throws -> Response {
        try await groupsPage(context: context)
    }

    /// GET /portal/admin/groups/:groupID?after=: the group's name, access and a page of its members.
    @Sendable func group(request: Request, context: PortalRequestContext) async throws -> Response {
        let group = try await existingGroup(context)
        let notice = request.uri.queryParameters.get("done") == "imported" ? "The roster was imported." : nil
        let after = request.uri.queryParameters.get("after").map { String($0) }
        return try await groupPage(group, after: after, context: context, notice: notice)
    }

    // MARK: Imports

    /// POST /portal/admin/groups: creates a group, or replaces one, with the id, name, access and roster of the form.
    @Sendable func importNew(request: Request, context: PortalRequestContext) async throws -> Response {
        let form = context.form
        let id = form.trimmed("id"), name = form.trimmed("name"), accessText = form.trimmed("access")
        let values = ["id": id, "name": name, "access": accessText]
        var errors: [String: String] = [:]
        if let problem = GroupService.groupIDProblem(id) { errors["id"] = Self.sentence(problem) }
        if !(1...GroupService.maximumNameLength).contains(name.count) {
            errors["name"] = "Enter a name of 1 to \(GroupService.maximumNameLength) characters."
        }
        let access = Self.usernames(accessText)
        if let bad = access.first(where: { AccountService.nameProblem($0) != nil }) {
            errors["access"] = "“\(bad)” cannot be a username. Separate usernames with commas or spaces."
        }
        let roster = Self.roster(form, errors: &errors)
        guard errors.isEmpty, let roster else {
            return try await groupsPage(context: context, values: values, errors: errors)
        }
        do {
            _ = try await services.groups.replace(id: id, name: name, members: roster.persons, access: access)
        } catch let refusal as GroupRefusal {
            return try await groupsPage(context: context, values: values, errors: ["roster": refusal.message])
        }
        return .redirect(to: Self.path(id) + "?done=imported")
    }

    /// POST /portal/admin/groups/:groupID/import: replaces the group's members with the file's; name and access stay.
    @Sendable func importRoster(request: Request, context: PortalRequestContext) async throws -> Response {
        let group = try await existingGroup(context)
        var errors: [String: String] = [:]
        guard let roster = Self.roster(context.form, errors: &errors) else {
            return try await groupPage(group, after: nil, context: context, errors: errors)
        }
        do {
            _ = try await services.groups.replace(
                id: group.id, name: group.name, members: roster.persons,
                access: group.access)
        } catch let refusal as GroupRefusal {
            return try await groupPage(group, after: nil, context: context, errors: ["roster": refusal.message])
        }
        return .redirect(to: Self.path(group.id) + "?done=imported")
    }

    /// The roster of the form's file, or nil with the problem under `errors["roster"]`.
    private static func roster(_ form: PortalForm, errors: inout [String: String]) -> RosterCSV? {
        guard let text = form["roster"] else {
            errors["roster"] = "Choose a CSV file with one person id a line."
            return nil
        }
        let roster = RosterCSV(text)
        if roster.problemCount > 0 {
            let more =
                roster.problemCount > roster.problems.count
                ? " And \(roster.problemCount - roster.problems.count) more lines like these." : ""
            errors["roster"] = "Nothing was imported. " + roster.problems.joined(separator: " ") + more
            return nil
        }
        if roster.persons.count > GroupService.maximumMembers {
            errors["roster"] =
                "The file has \(roster.persons.count) person ids; a group holds at most "
                + "\(GroupService.maximumMembers)."
            return nil
        }
        return roster
    }

    // MARK: Rendering

    private func groupsPage(
        context: PortalRequestContext, values: [String: String] = [:],
        errors: [String: String] = [:], notice: String? = nil
    ) async throws -> Response {
        let rows: [[String: Any]] = try await services.groups.all().map { group in
            [
                "id": group.id, "name": group.name, "members": group.memberCount, "path": Self.path(group.id),
                "access": group.access.isEmpty ? "admins only" : group.access.joined(separator: ", "),
                "updated": PortalTime.text(milliseconds: group.updatedAt),
            ]
        }
        let data: [String: Any] = [
            "groups": rows, "isEmpty": rows.isEmpty, "values": values, "errors": errors, "hasErrors": !errors.isEmpty,
            "maximumMembers": GroupService.maximumMembers,
        ]
        return pages.render(
            "admin-groups", context.page("Groups", data, notice: notice),
            status: errors.isEmpty ? .ok : .unprocessableContent)
    }

    private func groupPage(
        _ group: Group, after: String?, context: PortalRequestContext,
        errors: [String: String] = [:], notice: String? = nil
    ) async throws -> Response {
        let page: (persons: [String], next: String?)
        do {
            page = try await services.groups.members(of: group.id, after: after, limit: Self.pageSize)
        } catch let refusal as GroupRefusal where refusal.code == .invalidID {
            throw PortalError(
                status: .badRequest, title: "No such page", message: "This page of members does not exist.")
        } catch let refusal as GroupRefusal where refusal.code == .groupNotFound {
            throw PortalError.notFound("This group")
        }
        var data: [String: Any] = [
            "id": group.id, "name": group.name, "memberCount": group.memberCount, "path": Self.path(group.id),
            "access": group.access, "accessIsEmpty": group.access.isEmpty,
            // Each member links to the person's page (their devices and preferences).
            "members": page.persons.map { ["id": $0, "url": "/portal/admin/persons?id=" + Self.queryValue($0)] },
            "membersEmpty": page.persons.isEmpty, "updated": PortalTime.text(milliseconds: group.updatedAt),
            "errors": errors, "hasErrors": !errors.isEmpty, "isLaterPage": after != nil,
        ]
        if let next = page.next { data["nextURL"] = Self.path(group.id) + "?after=" + Self.queryValue(next) }
        return pages.render(
            "admin-group", context.page("Group \(group.name)", data, notice: notice),
            status: errors.isEmpty ? .ok : .unprocessableContent)
    }

    private func existingGroup(_ context: PortalRequestContext) async throws -> Group {
        let id = context.parameters.get("groupID") ?? ""
        do {
            return try await services.groups.group(id: id)
        } catch let refusal as GroupRefusal where refusal.code == .groupNotFound || refusal.code == .invalidID {
            throw PortalError.notFound("This group")
        }
    }

    /// The group's page.
    static func path(_ id: String) -> String { "/portal/admin/groups/" + id }

    /// Usernames written with commas, spaces or line breaks between them, each once.
    private static func usernames(_ text: String) -> [String] {
        var seen = Set<String>()
        return text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
            .filter { seen.insert($0).inserted }
    }

    /// A rule of `GroupService` ("a group id is …") as a sentence.
    private static func sentence(_ rule: String) -> String {
        (rule.prefix(1).uppercased() + rule.dropFirst()) + "."
    }

    /// `value` percent-encoded for a query string.
    private static func queryValue(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

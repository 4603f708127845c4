import DAO
import HubCore
import HTTPTypes
import Hummingbird
import Logging
import Mongo

/// The admin pages of the information cube: channels, the areas of a channel, the subjects of an area; each
/// listed with details, added, edited and deleted (after a confirmation) through the DAOs the REST routes use.
struct CubeAdminController {
    let services: HubServices
    let pages: PortalPages

    /// A level of the cube, and the element chosen at each level above it (and at it, for edit and delete).
    struct Place {
        var channel: Channel?
        var area: Area?
        var subject: Subject?
    }

    enum Level: String {
        case channel, area, subject

        var plural: String { rawValue + "s" }
        /// The level's name after "a" or "an", as a sentence needs it ("an area", "a subject").
        var withArticle: String { (rawValue.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + rawValue }
        var title: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
    }

    /// The pages on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        let channels = "/channels", areas = channels + "/:channelID/areas"
        let subjects = areas + "/:areaID/subjects"
        for (level, path, element) in [
            (Level.channel, channels, ":channelID"), (.area, areas, ":areaID"),
            (.subject, subjects, ":subjectID"),
        ] {
            admins.get(RouterPath(path)) { try await list(level, $0, $1) }
            admins.get(RouterPath(path + "/new")) { try await form(level, editing: false, $0, $1) }
            admins.post(RouterPath(path + "/new")) { try await save(level, editing: false, $0, $1) }
            admins.get(RouterPath(path + "/\(element)/edit")) { try await form(level, editing: true, $0, $1) }
            admins.post(RouterPath(path + "/\(element)/edit")) { try await save(level, editing: true, $0, $1) }
            admins.get(RouterPath(path + "/\(element)/delete")) { try await confirmDelete(level, $0, $1) }
            admins.post(RouterPath(path + "/\(element)/delete")) { try await delete(level, $0, $1) }
        }
    }

    // MARK: Pages

    /// The elements of a level, each with its details, links to edit, delete and (above subjects) its children.
    func list(_ level: Level, _ request: Request, _ context: PortalRequestContext) async throws -> Response {
        let place = try await resolve(level, context, element: false)
        let base = Self.listPath(level, place)
        let items: [[String: Any]]
        switch level {
        case .channel:
            items = try await services.cube.allChannels().map { channel in
                item(
                    name: channel.name, desc: channel.desc, access: channel.access, base: base, id: channel.id,
                    facts: [("Areas", "\(channel.areas.count)")],
                    child: ("Areas of \(channel.name)", "\(base)/\(channel.id.hex)/areas"))
            }
        case .area:
            items = (place.channel?.areas ?? []).map { area in
                item(
                    name: area.name, desc: area.desc, access: area.access, base: base, id: area.id,
                    facts: [("Subjects", "\(area.subjects.count)")],
                    child: ("Subjects of \(area.name)", "\(base)/\(area.id.hex)/subjects"))
            }
        case .subject:
            let audience = (try? await services.devices.audienceSizes()) ?? [:]
            items = (place.area?.subjects ?? []).map { subject in
                item(
                    name: subject.name, desc: subject.desc, access: subject.access, base: base, id: subject.id,
                    facts: [
                        ("Distribution", subject.distribution?.rawValue ?? "(none)"),
                        ("Level", SendTargets.levelText(subject.level)), ("Topic", subject.topicKey),
                        ("Devices", SendTargets.reachText(audience[subject.topicKey] ?? 0)),
                    ],
                    badges: [subject.distribution?.rawValue ?? "", subject.level].filter { !$0.isEmpty }, child: nil)
            }
        }
        let notice = request.uri.queryParameters.get("done").flatMap { Self.notices[$0] }.map {
            "The \(level.rawValue) \($0)."
        }
        let data: [String: Any] = [
            "heading": heading(level, place), "items": items, "isEmpty": items.isEmpty, "crumbs": crumbs(level, place),
            "addURL": base + "/new", "addLabel": "Add \(level.withArticle)", "level": level.rawValue,
            "levelPlural": level.plural, "explanation": Self.explanations[level] ?? "",
        ]
        return pages.render("admin-list", context.page(heading(level, place), data, notice: notice))
    }

    /// The add or edit form.
    func form(_ level: Level, editing: Bool, _ request: Request, _ context: PortalRequestContext) async throws
        -> Response
    {
        let place = try await resolve(level, context, element: editing)
        var values = CubeForm.Values()
        if editing, let element = place.element(level) {
            values = CubeForm.Values(
                name: element.name, desc: element.desc, access: element.access.joined(separator: ", "),
                level: place.subject?.level ?? "", distribution: place.subject?.distribution?.rawValue ?? "")
        }
        return renderForm(level, place, editing: editing, values: values, errors: [:], context: context)
    }

    /// POST of the add or edit form: saves and returns to the list, or shows the form again with the errors.
    func save(_ level: Level, editing: Bool, _ request: Request, _ context: PortalRequestContext) async throws
        -> Response
    {
        let place = try await resolve(level, context, element: editing)
        let form = CubeForm(context.form, isSubject: level == .subject)
        guard form.errors.isEmpty else {
            return renderForm(
                level, place, editing: editing, values: form.values, errors: form.errors, context: context,
                status: .unprocessableContent)
        }
        let draft = CubeElementDraft(name: form.values.name, desc: form.values.desc, access: form.access)
        switch (level, place.channel, place.area, place.subject) {
        case (.channel, nil, _, _): _ = try await services.cube.addChannel(draft)
        case (.channel, let channel?, _, _): _ = try await services.cube.updateChannel(channel.id, draft)
        case (.area, let channel?, nil, _): _ = try await services.cube.addArea(channelID: channel.id, draft)
        case (.area, let channel?, let area?, _):
            _ = try await services.cube.updateArea(channelID: channel.id, areaID: area.id, draft)
        case (.subject, let channel?, let area?, let subject):
            guard let subjectDraft = form.subjectDraft else {
                preconditionFailure("a subject form without errors has a draft")
            }
            if let subject {
                _ = try await services.cube.updateSubject(
                    channelID: channel.id, areaID: area.id, subjectID: subject.id,
                    subjectDraft)
            } else {
                _ = try await services.cube.addSubject(channelID: channel.id, areaID: area.id, subjectDraft)
            }
        default: throw PortalError.notFound("This page")
        }
        return .redirect(to: Self.listPath(level, place) + "?done=" + (editing ? "saved" : "added"))
    }

    /// The confirmation page of a delete.
    func confirmDelete(_ level: Level, _ request: Request, _ context: PortalRequestContext) async throws -> Response {
        let place = try await resolve(level, context, element: true)
        guard let element = place.element(level) else { throw PortalError.notFound("This \(level.rawValue)") }
        var consequence = "Phones stop receiving its messages. Messages already sent stay in the archive."
        switch level {
        case .channel:
            consequence =
                "Its \(place.channel?.areas.count ?? 0) area(s) and all their subjects go with it. " + consequence
        case .area: consequence = "Its \(place.area?.subjects.count ?? 0) subject(s) go with it. " + consequence
        case .subject: break
        }
        let data: [String: Any] = [
            "question": "Delete the \(level.rawValue) “\(element.name)”?", "consequence": consequence,
            "action": Self.listPath(level, place) + "/\(element.id.hex)/delete",
            "cancelURL": Self.listPath(level, place),
            "crumbs": crumbs(level, place),
        ]
        return pages.render("confirm-delete", context.page("Delete \(level.withArticle)", data))
    }

    /// POST of the confirmation: deletes and returns to the list.
    func delete(_ level: Level, _ request: Request, _ context: PortalRequestContext) async throws -> Response {
        let place = try await resolve(level, context, element: true)
        switch (level, place.channel, place.area, place.subject) {
        case (.channel, let channel?, _, _): try await services.cube.deleteChannel(channel.id)
        case (.area, let channel?, let area?, _):
            try await services.cube.deleteArea(channelID: channel.id, areaID: area.id)
        case (.subject, let channel?, let area?, let subject?):
            try await services.cube.deleteSubject(channelID: channel.id, areaID: area.id, subjectID: subject.id)
        default: throw PortalError.notFound("This page")
        }
        return .redirect(to: Self.listPath(level, place) + "?done=deleted")
    }

    // MARK: Helpers

    /// Reads the channel, area and subject the path names, down to `level`'s parent (and the element itself
    /// when `element`).
    /// - Throws: `PortalError` 404 when one does not exist.
    private func resolve(_ level: Level, _ context: PortalRequestContext, element: Bool) async throws -> Place {
        func id(_ name: String, _ what: String) throws -> ObjectID {
            guard let id = context.parameters.get(name).flatMap(ObjectID.init(hex:)) else {
                throw PortalError.notFound(what)
            }
            return id
        }
        var place = Place()
        let needsChannel = level != .channel || element
        guard needsChannel else { return place }
        do {
            place.channel = try await services.cube.channel(try id("channelID", "This channel"))
        } catch let error as DAOError where error.code == .channelNotFound {
            throw PortalError.notFound("This channel")
        }
        if level == .subject || (level == .area && element) {
            guard let area = place.channel?.area(try id("areaID", "This area")) else {
                throw PortalError.notFound("This area")
            }
            place.area = area
        }
        if level == .subject && element {
            guard let subject = place.area?.subject(try id("subjectID", "This subject")) else {
                throw PortalError.notFound("This subject")
            }
            place.subject = subject
        }
        return place
    }

    private func renderForm(
        _ level: Level, _ place: Place, editing: Bool, values: CubeForm.Values,
        errors: [String: String], context: PortalRequestContext,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let base = Self.listPath(level, place)
        let action = editing ? base + "/\(place.element(level)?.id.hex ?? "")/edit" : base + "/new"
        let heading =
            editing
            ? "Edit the \(level.rawValue) “\(place.element(level)?.name ?? "")”"
            : "Add \(level.withArticle)" + (place.parentName(level).map { " to “\($0)”" } ?? "")
        var data: [String: Any] = [
            "heading": heading, "action": action, "cancelURL": base, "values": values.dictionary, "errors": errors,
            "hasErrors": !errors.isEmpty, "isSubject": level == .subject, "submitLabel": editing ? "Save" : "Add",
            "crumbs": crumbs(level, place), "level": level.rawValue,
            "limits": ["name": FieldLimits.name, "desc": FieldLimits.desc],
        ]
        if level == .subject {
            data["levels"] = SubscriptionLevel.allCases.map {
                [
                    "value": $0.rawValue, "label": SendTargets.levelText($0.rawValue),
                    "selected": $0.rawValue == values.level,
                ]
            }
            data["distributions"] = Distribution.allCases.map {
                [
                    "value": $0.rawValue, "selected": $0.rawValue == values.distribution,
                    "explanation": $0 == .alert
                        ? "a push notification, and the message in the app"
                        : "the message in the app only, without a notification",
                ]
            }
        }
        return pages.render("admin-form", context.page(heading, data), status: status)
    }

    private func item(
        name: String, desc: String, access: [String], base: String, id: ObjectID,
        facts: [(String, String)], badges: [String] = [], child: (String, String)?
    ) -> [String: Any] {
        var facts = facts.map { ["label": $0.0, "value": $0.1] }
        facts.insert(
            ["label": "Who may send", "value": access.isEmpty ? "everyone" : access.joined(separator: ", ")], at: 0)
        var item: [String: Any] = [
            "id": id.hex, "name": name.isEmpty ? "(no name)" : name, "desc": desc, "facts": facts, "badges": badges,
            "editURL": "\(base)/\(id.hex)/edit", "deleteURL": "\(base)/\(id.hex)/delete",
        ]
        if let child { item["child"] = ["label": child.0, "url": child.1] }
        return item
    }

    private func heading(_ level: Level, _ place: Place) -> String {
        switch level {
        case .channel: "Channels"
        case .area: "Areas of “\(place.channel?.name ?? "")”"
        case .subject: "Subjects of “\(place.channel?.name ?? "") › \(place.area?.name ?? "")”"
        }
    }

    /// The way back up: Channels › channel › area.
    private func crumbs(_ level: Level, _ place: Place) -> [[String: String]] {
        var crumbs = [["label": "Channels", "url": "/portal/admin/channels"]]
        if level != .channel, let channel = place.channel {
            crumbs.append(["label": channel.name, "url": "/portal/admin/channels/\(channel.id.hex)/areas"])
        }
        if level == .subject, let channel = place.channel, let area = place.area {
            crumbs.append([
                "label": area.name,
                "url": "/portal/admin/channels/\(channel.id.hex)/areas/\(area.id.hex)/subjects",
            ])
        }
        return crumbs
    }

    /// The list page of `level` under `place`.
    static func listPath(_ level: Level, _ place: Place) -> String {
        let channels = "/portal/admin/channels"
        switch level {
        case .channel: return channels
        case .area: return "\(channels)/\(place.channel?.id.hex ?? "")/areas"
        case .subject: return "\(channels)/\(place.channel?.id.hex ?? "")/areas/\(place.area?.id.hex ?? "")/subjects"
        }
    }

    private static let notices = ["added": "was added", "saved": "was saved", "deleted": "was deleted"]

    private static let explanations: [Level: String] = [
        .channel: "A channel is a school or an organisation; phones choose the channels they follow.",
        .area: "An area groups subjects within a channel, for example a year or a department.",
        .subject: "A subject is what phones subscribe to. Alert subjects send a push notification; "
            + "Information subjects put the message in the app without one.",
    ]
}

extension CubeAdminController.Place {
    /// The element at `level` itself (what an edit or delete is about).
    func element(_ level: CubeAdminController.Level) -> (id: ObjectID, name: String, desc: String, access: [String])? {
        switch level {
        case .channel: channel.map { ($0.id, $0.name, $0.desc, $0.access) }
        case .area: area.map { ($0.id, $0.name, $0.desc, $0.access) }
        case .subject: subject.map { ($0.id, $0.name, $0.desc, $0.access) }
        }
    }

    /// The name of the element a new one at `level` goes under.
    func parentName(_ level: CubeAdminController.Level) -> String? {
        switch level {
        case .channel: nil
        case .area: channel?.name
        case .subject: area?.name
        }
    }
}

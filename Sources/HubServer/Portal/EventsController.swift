import DAO
import Foundation
import HTTPTypes
import HubCore
import HubModel
import HubTime
import Hummingbird
import Mongo

/// The portal's events pages: the occurrences of the coming weeks, an event's page (its occurrences, each cancelled
/// on its own, the whole event cancelled), the form that creates or edits one, and a rota's grid (a week a row, the
/// persons of each night). Every change goes through `EventService` with the user's identity, the code behind
/// `/event`: the same rules, the same access (a user changes only events whose audience they may send to).
struct EventsController {
    let services: HubServices
    let pages: PortalPages
    let school: SchoolTime

    /// How far ahead the list and an event's page show occurrences, and the most they show.
    static let listDays = 28, eventDays = 42, maximumListed = 200
    /// The weeks a rota's grid shows.
    static let rotaWeeks = 8

    /// The routes on `users`, the group of logged-in users.
    func addRoutes(to users: RouterGroup<PortalRequestContext>) {
        users.get("/events", use: list)
        users.get("/events/new", use: newForm)
        users.post("/events", use: create)
        users.get("/events/:eventID", use: show)
        users.get("/events/:eventID/edit", use: editForm)
        users.post("/events/:eventID", use: edit)
        users.post("/events/:eventID/delete", use: delete)
        users.post("/events/:eventID/occurrences/:date/cancel", use: cancel)
        users.get("/events/:eventID/calendar.ics", use: calendar)
        users.get("/events/:eventID/rota", use: rota)
        users.post("/events/:eventID/rota", use: saveRota)
    }

    /// Reads the message fields of an event as `POST /message` does (the API's reader).
    private var compose: EventService.Compose { EventController(services: services).compose }

    static func path(_ id: ObjectID) -> String { "/portal/events/" + id.hex }

    /// What a `done` query parameter says on the page it leads to.
    static let doneNotices = [
        "created": "The event is saved: its reminders go out at their times.",
        "edited": "The event is changed: every reminder not sent yet follows it.",
        "cancelled": "The occurrence is cancelled: its reminders are not sent.",
        "deleted": "The event is cancelled: none of its reminders is sent any more.",
        "rota": "The rota is saved: each night's reminders go to its persons.",
    ]

    // MARK: Pages

    /// GET /portal/events: the occurrences of every event in the coming weeks, by start.
    @Sendable func list(request: Request, context: PortalRequestContext) async throws -> Response {
        _ = try context.loggedInUser()
        let now = services.now()
        let listed = try await services.events.occurrences(
            from: now, to: now + Int64(Self.listDays) * 86_400_000, limit: Self.maximumListed)
        let rows: [[String: Any]] = listed.map { item in
            [
                "title": item.event.template["title"]?.stringValue ?? "", "path": Self.path(item.event.id),
                "date": item.occurrence.date.description, "when": when(item),
            ]
        }
        let data: [String: Any] = ["occurrences": rows, "isEmpty": rows.isEmpty, "days": Self.listDays]
        let notice = Self.doneNotices[request.uri.queryParameters.get("done") ?? ""]
        return pages.render("events", context.page("Events and reminders", data, notice: notice))
    }

    /// GET /portal/events/new: the empty form, in the school's zone.
    @Sendable func newForm(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        return try await formPage(EventForm(timeZone: school.name), event: nil, user: user, context: context)
    }

    /// POST /portal/events: creates the event, then shows its page; or the form again with what is wrong.
    @Sendable func create(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let form = EventForm(form: context.form)
        return try await save(form, event: nil, user: user, context: context)
    }

    /// GET /portal/events/:eventID: the event's facts and its occurrences of the coming weeks.
    @Sendable func show(request: Request, context: PortalRequestContext) async throws -> Response {
        _ = try context.loggedInUser()
        let event = try await existingEvent(context)
        let now = services.now()
        let listed =
            (try? services.events.occurrences(
                of: event, from: now, to: now + Int64(Self.eventDays) * 86_400_000, limit: Self.maximumListed)) ?? []
        let occurrences: [[String: Any]] = listed.map { item in
            [
                "date": item.occurrence.date.description, "when": when(item),
                "persons": (event.rota[item.occurrence.date.description] ?? []).joined(separator: ", "),
                "reminders": item.reminders.map { school.field($0).replacingOccurrences(of: "T", with: " ") }
                    .joined(separator: ", "),
                "cancelPath": Self.path(event.id) + "/occurrences/\(item.occurrence.date)/cancel",
            ]
        }
        var data: [String: Any] = [
            "id": event.id.hex, "path": Self.path(event.id), "title": event.template["title"]?.stringValue ?? "",
            "message": event.template["message"]?.stringValue ?? "",
            "starts": event.schedule.startsAt.replacingOccurrences(of: "T", with: " ").prefix(16) + " ("
                + event.schedule.timeZone + ")",
            "audience": await audience(of: event), "isRecurring": event.schedule.recurrence != nil,
            "reminders": event.schedule.reminders.map(Self.leadName).joined(separator: ", "),
            "occurrences": occurrences, "hasOccurrences": !occurrences.isEmpty, "days": Self.eventDays,
            "createdBy": event.sender["name"]?.stringValue ?? "", "schoolZone": school.name,
        ]
        // Only what the event has: a section shows when its key is present.
        if let location = event.location, !location.isEmpty { data["location"] = location }
        if let recurrence = event.schedule.recurrence { data["repeats"] = recurrence }
        if !event.schedule.exceptions.isEmpty {
            data["cancelledDates"] = event.schedule.exceptions.joined(separator: ", ")
        }
        if let announcement = event.announcement { data["announced"] = "/portal/messages/" + announcement.hex }
        if let next = event.dueAt { data["nextReminder"] = school.text(next) }
        if let error = event.lastError { data["lastError"] = error }
        let notice = Self.doneNotices[request.uri.queryParameters.get("done") ?? ""]
        return pages.render(
            "event", context.page(event.template["title"]?.stringValue ?? "Event", data, notice: notice))
    }

    /// GET /portal/events/:eventID/edit: the form filled from the event.
    @Sendable func editForm(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let event = try await existingEvent(context)
        return try await formPage(EventForm(event: event), event: event, user: user, context: context)
    }

    /// POST /portal/events/:eventID: replaces the event with the form (every reminder not sent yet follows).
    @Sendable func edit(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let event = try await existingEvent(context)
        var form = EventForm(form: context.form)
        if context.form.trimmed("to") == "fixed" { form.fixedAudience = EventForm.fixedAudience(of: event) }
        return try await save(form, event: event, user: user, context: context)
    }

    /// POST /portal/events/:eventID/delete: cancels the whole event.
    @Sendable func delete(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let event = try await existingEvent(context)
        try await refusingAsPage {
            try await services.events.delete(id: event.id, compose: compose, as: user.identity)
        }
        return .redirect(to: "/portal/events?done=deleted")
    }

    /// POST /portal/events/:eventID/occurrences/:date/cancel: cancels one occurrence.
    @Sendable func cancel(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        let event = try await existingEvent(context)
        guard let date = context.parameters.get("date").flatMap(LocalDate.init(parsing:)) else {
            throw PortalError.notFound("This occurrence")
        }
        _ = try await refusingAsPage {
            try await services.events.cancel(id: event.id, on: date, compose: compose, as: user.identity)
        }
        return .redirect(to: Self.path(event.id) + "?done=cancelled")
    }

    /// GET /portal/events/:eventID/calendar.ics: the event's calendar file (`EventCalendar`, as `GET
    /// /event/:eventID.ics` answers it).
    @Sendable func calendar(request: Request, context: PortalRequestContext) async throws -> Response {
        _ = try context.loggedInUser()
        return try EventCalendar.response(of: try await existingEvent(context), now: services.now())
    }

    /// GET /portal/events/:eventID/rota: the grid of the coming weeks, a week a row, each night's persons.
    @Sendable func rota(request: Request, context: PortalRequestContext) async throws -> Response {
        _ = try context.loggedInUser()
        let event = try await existingEvent(context)
        return try rotaPage(event, values: [:], errors: [:], context: context)
    }

    /// POST /portal/events/:eventID/rota: each night whose persons changed is assigned them (`EventService.assign`,
    /// the call of `PUT /event/:eventID/occurrences/:date`); a night refused shows its reason, the others are saved.
    @Sendable func saveRota(request: Request, context: PortalRequestContext) async throws -> Response {
        let user = try context.loggedInUser()
        var event = try await existingEvent(context)
        var values: [String: String] = [:], errors: [String: String] = [:]
        for (date, _) in rotaNights(of: event) {
            let key = date.description
            guard let typed = context.form["night-" + key]?.trimmingCharacters(in: .whitespacesAndNewlines) else {
                continue
            }
            let persons = SendRecipients.personIDs(typed)
            values[key] = typed
            guard persons != (event.rota[key] ?? []) else { continue }
            do {
                event = try await services.events.assign(
                    persons, to: date, of: event.id, compose: compose, as: user.identity)
            } catch let refusal as SendRefusal {
                errors[key] = refusal.message
            } catch let refusal as EventRefusal where refusal.code != .eventNotFound {
                errors[key] = refusal.message
            }
        }
        guard errors.isEmpty else {
            return try rotaPage(event, values: values, errors: errors, context: context)
        }
        return .redirect(to: Self.path(event.id) + "?done=rota")
    }

    // MARK: Saving

    /// Creates (`event` nil) or replaces the event with `form`, as `user`; the form again with what is wrong.
    private func save(
        _ form: EventForm, event: Event?, user: PortalUser, context: PortalRequestContext
    ) async throws -> Response {
        var errors = form.problems
        let targets = try await services.sendTargets(for: user.identity)
        // A subject's distribution is the subject's; a group's or persons' an Alert (a reminder is a notification),
        // or, for an event edited, what it was.
        var distribution =
            event?.template["distribution"]?.stringValue.flatMap(Distribution.init(rawValue:)) ?? .alert
        if form.kind == .subject, form.fixedAudience == nil {
            if let target = targets.targets.first(where: { $0.subject.topicKey == form.topicKey }) {
                distribution = target.subject.distribution ?? .alert
            } else {
                errors["audience"] = "Choose a subject you may send to."
            }
        }
        guard errors.isEmpty else {
            return try await formPage(form, event: event, user: user, context: context, errors: errors)
        }
        do {
            let draft = try EventController.draft(
                form.body(distribution: distribution, keeping: event?.template ?? [:]))
            let saved =
                if let event {
                    try await services.events.replace(id: event.id, with: draft, compose: compose, as: user.identity)
                } else {
                    try await services.events.create(draft, compose: compose, as: user.identity)
                }
            return .redirect(to: Self.path(saved.id) + "?done=" + (event == nil ? "created" : "edited"))
        } catch let refusal as EventRefusal where refusal.code != .eventNotFound {
            errors["schedule"] = Self.sentence(refusal.message)
        } catch let refusal as SendRefusal {
            errors[refusal.field == .title ? "title" : refusal.field == .message ? "message" : "audience"] =
                Self.sentence(refusal.message)
        } catch let error as HubError where error.status == .unprocessableContent {
            errors["schedule"] = Self.sentence(error.message)
        }
        return try await formPage(form, event: event, user: user, context: context, errors: errors)
    }

    /// Runs `change`; a refusal of the service (the user may not send to the audience, the event changed meanwhile)
    /// becomes a page saying so.
    private func refusingAsPage<T>(_ change: () async throws -> T) async throws -> T {
        do {
            return try await change()
        } catch let refusal as SendRefusal {
            throw PortalError(status: .forbidden, title: "Not allowed", message: Self.sentence(refusal.message))
        } catch let refusal as EventRefusal where refusal.code == .eventNotFound {
            throw PortalError.notFound("This event")
        } catch let refusal as EventRefusal {
            throw PortalError(
                status: .conflict, title: "This cannot be done", message: Self.sentence(refusal.message))
        }
    }

    // MARK: Rendering

    private func formPage(
        _ form: EventForm, event: Event?, user: PortalUser, context: PortalRequestContext,
        errors: [String: String] = [:]
    ) async throws -> Response {
        let targets = try await services.sendTargets(for: user.identity)
        let recipients = await SendRecipients.load(for: user.identity, services: services, countingDevices: false)
        var data = form.templateData()
        data["subjects"] = targets.targets.map { target -> [String: Any] in
            [
                "topicKey": target.subject.topicKey,
                "name": "\(target.channel.name) › \(target.area.name) › \(target.subject.name)",
                "selected": target.subject.topicKey == form.topicKey,
            ]
        }
        data["groups"] = recipients.groups.map {
            ["id": $0.group.id, "name": $0.group.name, "selected": $0.group.id == form.group]
        }
        data["hasSubjects"] = !targets.targets.isEmpty
        data["hasGroups"] = !recipients.groups.isEmpty
        data["mayMessagePersons"] = recipients.mayMessagePersons
        data["errors"] = errors
        data["hasErrors"] = !errors.isEmpty
        data["schoolZone"] = school.name
        data["action"] = event.map { Self.path($0.id) } ?? "/portal/events"
        data["isEdit"] = event != nil
        if let event { data["path"] = Self.path(event.id) }
        return pages.render(
            "event-form", context.page(event == nil ? "New event" : "Edit event", data),
            status: errors.isEmpty ? .ok : .unprocessableContent)
    }

    /// The nights the rota grid shows: the event's occurrences from this week's Monday for `rotaWeeks` weeks.
    private func rotaNights(of event: Event) -> [(LocalDate, EventService.ListedOccurrence)] {
        let monday = mondayOfThisWeek()
        let from = LocalDateTime(date: monday, hour: 0, minute: 0)!.instant(in: school.zone) - 86_400_000
        let to = from + Int64(Self.rotaWeeks * 7 + 2) * 86_400_000
        let last = monday.adding(days: Self.rotaWeeks * 7 - 1)
        let listed = (try? services.events.occurrences(of: event, from: from, to: to, limit: Self.maximumListed)) ?? []
        return listed.map { ($0.occurrence.date, $0) }.filter { $0.0 >= monday && $0.0 <= last }
    }

    private func mondayOfThisWeek() -> LocalDate {
        let today = LocalDateTime(instant: services.now(), in: school.zone).date
        // `weekday`: 1 Monday … 7 Sunday.
        return today.adding(days: 1 - today.weekday)
    }

    private func rotaPage(
        _ event: Event, values: [String: String], errors: [String: String], context: PortalRequestContext
    ) throws -> Response {
        let nights = Dictionary(rotaNights(of: event).map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        let monday = mondayOfThisWeek()
        let weeks: [[String: Any]] = (0..<Self.rotaWeeks).map { week in
            let start = monday.adding(days: week * 7)
            let days: [[String: Any]] = (0..<7).map { offset in
                let date = start.adding(days: offset)
                let key = date.description
                guard let night = nights[date] else {
                    return ["date": key, "hasNight": false, "cancelled": event.schedule.exceptions.contains(key)]
                }
                var day: [String: Any] = [
                    "date": key, "hasNight": true,
                    "time": String(night.occurrence.local.description.dropFirst(11).prefix(5)),
                    "persons": values[key] ?? (event.rota[key] ?? []).joined(separator: ", "),
                ]
                if let error = errors[key] { day["error"] = error }
                return day
            }
            return ["week": start.description, "days": days]
        }
        let data: [String: Any] = [
            "title": event.template["title"]?.stringValue ?? "", "path": Self.path(event.id), "weeks": weeks,
            "weekdays": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "errors": errors,
            "hasErrors": !errors.isEmpty, "tz": event.schedule.timeZone,
        ]
        return pages.render(
            "event-rota", context.page("Rota", data), status: errors.isEmpty ? .ok : .unprocessableContent)
    }

    /// An occurrence's start as a page shows it: on the event's wall clock with its zone, and on the school's when
    /// the event is in another zone.
    private func when(_ item: EventService.ListedOccurrence) -> String {
        let local = item.occurrence.local.description
        let text = "\(local.prefix(10)) \(local.dropFirst(11).prefix(5)) (\(item.event.schedule.timeZone))"
        return item.event.schedule.timeZone == school.name ? text : text + ", " + school.text(item.occurrence.instant)
    }

    /// Who the event is for, in words.
    private func audience(of event: Event) async -> String {
        if let to = event.template["to"]?.documentValue {
            let groups = to["groups"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let persons = to["persons"]?.arrayValue?.compactMap(\.stringValue) ?? []
            return (groups.map { "group \($0)" } + persons.map { "person \($0)" }).joined(separator: ", ")
        }
        let topic = event.template["topic_key"]?.stringValue ?? ""
        guard let location = try? await services.cube.location(topicKey: topic) else { return "subject \(topic)" }
        return "\(location.channel.name) › \(location.area.name) › \(location.subject.name)"
    }

    /// A lead in words ("1 day before"), the ISO 8601 duration when the form offers no words for it.
    static func leadName(_ lead: String) -> String {
        EventForm.offeredLeads.first { $0.lead == lead }?.name ?? lead + " before"
    }

    /// A service's message ("the field ... must ...") as a sentence.
    static func sentence(_ text: String) -> String {
        let text = text.prefix(1).uppercased() + text.dropFirst()
        return text.hasSuffix(".") ? text : text + "."
    }

    private func existingEvent(_ context: PortalRequestContext) async throws -> Event {
        guard let id = context.parameters.get("eventID").flatMap(ObjectID.init(hex:)) else {
            throw PortalError.notFound("This event")
        }
        do {
            return try await services.events.event(id: id)
        } catch let refusal as EventRefusal where refusal.code == .eventNotFound {
            throw PortalError.notFound("This event")
        }
    }
}

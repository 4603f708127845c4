import DAO
import Foundation
import HubCore
import HubTime
import Hummingbird
import Mongo

/// Events with reminders (`POST`/`GET`/`PUT`/`DELETE /event`, the occurrences of one or of all in a range), for
/// admins and communicators: the message fields are `POST /message`'s, held to its rules by `EventService`.
struct EventController {
    let services: HubServices

    /// The fields of a body that are the event's, not its message's.
    static let eventFields: Set<String> = [
        "starts_at", "ends_at", "tz", "location", "reminders", "announce", "recurrence", "exdates",
    ]
    /// How many occurrences a listing answers at most, and by default.
    static let maximumOccurrences = 1_000, defaultOccurrences = 100
    /// How far a listing's range may reach.
    static let maximumRangeMS: Int64 = 400 * 86_400_000

    /// Every route on `senders` (admins and communicators) but the calendar file, on `staffOrDevices` (a device of
    /// the event's audience too).
    func addRoutes(to senders: RouterGroup<HubRequestContext>, staffOrDevices: RouterGroup<HubRequestContext>) {
        staffOrDevices.get("/event/{eventID}.ics", use: calendar)
        senders.post("/event", use: create)
        senders.get("/event", use: list)
        senders.get("/event/:eventID", use: get)
        senders.put("/event/:eventID", use: replace)
        senders.delete("/event/:eventID", use: delete)
        senders.get("/event/:eventID/occurrences", use: occurrences)
        senders.put("/event/:eventID/occurrences/:date", use: assign)
        senders.delete("/event/:eventID/occurrences/:date", use: cancel)
    }

    /// Reads a reminder's or announcement's message fields as `POST /message` does.
    var compose: EventService.Compose {
        { [services] template in try MessageController.submission(FieldReader(document: template), services: services) }
    }

    /// POST /event: 201 with the event (its `announcement` when `"announce": true` sent one).
    @Sendable func create(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        var request = request
        let draft = try Self.draft(try await request.jsonObject(context: context))
        let event = try await services.events.create(draft, compose: compose, as: identity)
        return JSONResponse.make(.document(try Self.document(event, now: services.now())), status: .created)
    }

    /// PUT /event/:eventID: the event replaced, every reminder not sent yet moved to it.
    @Sendable func replace(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let id = try context.parameters.objectID("eventID")
        var request = request
        let draft = try Self.draft(try await request.jsonObject(context: context))
        let event = try await services.events.replace(id: id, with: draft, compose: compose, as: identity)
        return JSONResponse.make(.document(try Self.document(event, now: services.now())))
    }

    /// GET /event/:eventID.
    @Sendable func get(request: Request, context: HubRequestContext) async throws -> Response {
        let event = try await services.events.event(id: try context.parameters.objectID("eventID"))
        return JSONResponse.make(.document(try Self.document(event, now: services.now())))
    }

    /// GET /event/:eventID.ics: the event as an RFC 5545 calendar file (`EventCalendar`), for staff and for a device
    /// whose person the event is for (named, or a member of a group named) or, for a topic's event, any device.
    @Sendable func calendar(request: Request, context: HubRequestContext) async throws -> Response {
        let id = try context.parameters.objectID("eventID")
        let event = try await services.events.event(id: id)
        if context.deviceSecret != nil {
            let device = try await services.devices.authenticate(secret: context.deviceSecret)
            guard try await services.events.isFor(device, event: event) else {
                throw HubError(.notFound, .eventNotFound, "no event has the id \(id.hex)")
            }
        }
        return try EventCalendar.response(of: event, now: services.now())
    }

    /// DELETE /event/:eventID: 204; no reminder of it is sent any more. The caller must be able to send to its
    /// audience.
    @Sendable func delete(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let id = try context.parameters.objectID("eventID")
        try await services.events.delete(id: id, compose: compose, as: identity)
        return Response(status: .noContent)
    }

    /// The path's `date`: a local date YYYY-MM-DD.
    /// - Throws: `HubError` 400 `invalid_id`.
    static func date(_ context: HubRequestContext) throws -> LocalDate {
        guard let text = context.parameters.get("date"), let date = LocalDate(parsing: text) else {
            throw HubError.badRequest(.invalidID, "the date must be a local date YYYY-MM-DD")
        }
        return date
    }

    /// DELETE /event/:eventID/occurrences/:date: the occurrence cancelled (no reminder of it is sent; an announced
    /// event's announcement says so); 200 with the event.
    @Sendable func cancel(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let id = try context.parameters.objectID("eventID")
        let date = try Self.date(context)
        let changed = try await services.events.cancel(id: id, on: date, compose: compose, as: identity)
        return JSONResponse.make(.document(try Self.document(changed, now: services.now())))
    }

    /// PUT /event/:eventID/occurrences/:date `{"to": {"persons": [ids]}}`: the occurrence's persons (a rota's
    /// night): its reminders go to them alone, each naming the others in `{partners}`; an empty list gives the
    /// occurrence back to the event's audience. 200 with the event.
    @Sendable func assign(request: Request, context: HubRequestContext) async throws -> Response {
        let identity = try context.caller()
        let id = try context.parameters.objectID("eventID")
        let date = try Self.date(context)
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        guard let recipients = try MessageController.recipients(fields), recipients.groups.isEmpty,
            recipients.exceptPersons.isEmpty, recipients.persons.count <= 50
        else {
            throw HubError.invalid(.invalidField, "the field \"to\" must be {\"persons\": [at most 50 person ids]}")
        }
        let changed = try await services.events.assign(
            recipients.persons, to: date, of: id, compose: compose, as: identity)
        return JSONResponse.make(.document(try Self.document(changed, now: services.now())))
    }

    /// GET /event?from=&to=&limit=: the occurrences of every event starting in the range, by start.
    @Sendable func list(request: Request, context: HubRequestContext) async throws -> Response {
        let (from, to, limit) = try Self.range(request)
        let listed = try await services.events.occurrences(from: from, to: to, limit: limit)
        return JSONResponse.make(["occurrences": .array(listed.map { .document(Self.document($0, withEvent: true)) })])
    }

    /// GET /event/:eventID/occurrences?from=&to=&limit=: the event's occurrences starting in the range, each with
    /// its instants (UTC and local) and its reminders' times.
    @Sendable func occurrences(request: Request, context: HubRequestContext) async throws -> Response {
        let event = try await services.events.event(id: try context.parameters.objectID("eventID"))
        let (from, to, limit) = try Self.range(request)
        let listed = try services.events.occurrences(of: event, from: from, to: to, limit: limit)
        return JSONResponse.make(["occurrences": .array(listed.map { .document(Self.document($0, withEvent: false)) })])
    }

    // MARK: Reading

    /// The event draft of a body: the event's fields, the rest its message's (`send_at` refused: the schedule says
    /// when).
    /// - Throws: `HubError` 422 naming the field.
    static func draft(_ body: BSONDocument, defaults: Bool = true) throws -> EventService.Draft {
        let fields = FieldReader(document: body)
        guard body["send_at"] == nil else {
            throw HubError.invalid(.invalidField, "an event has no \"send_at\": its reminders are sent at their times")
        }
        var template = BSONDocument(body.elements.filter { !eventFields.contains($0.key) })
        // The event's own defaults for what POST /message requires.
        if defaults, template["desc"] == nil { template["desc"] = template["title"] ?? "" }
        if defaults, template["distribution"] == nil { template["distribution"] = "Alert" }
        let schedule = Event.Schedule(
            startsAt: try fields.string("starts_at", maxLength: 32, allowEmpty: false),
            endsAt: try fields.optionalString("ends_at", maxLength: 32),
            timeZone: try fields.string("tz", maxLength: 64, allowEmpty: false),
            recurrence: try fields.optionalString("recurrence", maxLength: 512),
            exceptions: try strings(body, "exdates", maxCount: EventSchedule.maximumExceptions),
            reminders: try strings(body, "reminders", maxCount: EventSchedule.maximumReminders))
        let announce: Bool
        switch body["announce"] {
        case nil, .null?: announce = false
        case .bool(let value)?: announce = value
        default: throw HubError.invalid(.invalidField, "the field \"announce\" must be true or false")
        }
        return EventService.Draft(
            schedule: schedule, template: template, location: try fields.optionalString("location", maxLength: 200),
            announce: announce)
    }

    /// POST /message with `recurrence`: a recurring message, stored as a series (an event whose every occurrence
    /// sends the message as it is, at its time: `starts_at` and `tz` say the first, or `send_at` read in `tz`); 201
    /// with the series (`series`: its id, the `/event` it is; `DELETE /event/:id` stops it).
    func createSeries(_ body: BSONDocument, as identity: Identity) async throws -> Response {
        var body = body
        if body["starts_at"] == nil, let sendAt = body["send_at"]?.int64Value, let zone = body["tz"]?.stringValue,
            let timeZone = TimeZone(identifier: zone)
        {
            body["starts_at"] = .string(LocalDateTime(instant: sendAt, in: timeZone).description)
        }
        guard body["starts_at"] != nil else {
            throw HubError.invalid(
                .missingField,
                "a recurring message needs \"starts_at\" (its first time, local in \"tz\") or \"send_at\"")
        }
        guard body["reminders"] == nil, body["announce"] == nil else {
            throw HubError.invalid(
                .invalidField, "a recurring message has no \"reminders\" or \"announce\": use /event")
        }
        body["send_at"] = nil
        body["reminders"] = ["PT0S"]
        var draft = try Self.draft(body, defaults: false)
        draft.isNotice = true
        let event = try await services.events.create(draft, compose: compose, as: identity)
        var document = try Self.document(event, now: services.now())
        document["series"] = .string(event.id.hex)
        return JSONResponse.make(.document(document), status: .created)
    }

    /// The body's array of strings `key` (absent: empty), at most `maxCount`.
    static func strings(_ body: BSONDocument, _ key: String, maxCount: Int) throws -> [String] {
        guard let value = body[key], !value.isNull else { return [] }
        guard let array = value.arrayValue, array.count <= maxCount,
            case let strings = array.compactMap(\.stringValue), strings.count == array.count
        else {
            throw HubError.invalid(
                .invalidField, "the field \"\(key)\" must be an array of at most \(maxCount) strings")
        }
        return strings
    }

    /// A listing's range: `from` (default now) and `to` (default 30 days later), Unix ms or ISO 8601 instants, at
    /// most `maximumRangeMS` apart; and `limit`.
    /// - Throws: `HubError` 400 `invalid_query`.
    static func range(_ request: Request) throws -> (Int64, Int64, Int) {
        let query = request.uri.queryParameters
        func instant(_ name: String) throws -> Int64? {
            guard let text = query[Substring(name)].map(String.init), !text.isEmpty else { return nil }
            if let ms = Int64(text) { return ms }
            let formatter = ISO8601DateFormatter()
            guard let date = formatter.date(from: text) else {
                throw HubError.badRequest(
                    .invalidQuery, "\"\(name)\" must be Unix milliseconds or an ISO 8601 instant (2027-03-01T00:00:00Z)"
                )
            }
            return Int64(date.timeIntervalSince1970 * 1000)
        }
        let from = try instant("from") ?? UnixTime.nowMilliseconds()
        let to = try instant("to") ?? from + 30 * 86_400_000
        guard to > from, to - from <= maximumRangeMS else {
            throw HubError.badRequest(.invalidQuery, "\"to\" must be after \"from\", at most 400 days later")
        }
        let limit = try PageQuery.limit(query, default: defaultOccurrences, maximum: maximumOccurrences)
        return (from, to, limit)
    }

    // MARK: Answers

    /// An instant as answered: ISO 8601 UTC.
    static func utc(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// The event as the API shows it: its message fields, its schedule, where its reminders stand.
    static func document(_ event: Event, now: Int64) throws -> BSONDocument {
        var document: BSONDocument = ["id": .string(event.id.hex)]
        for (key, value) in event.template { document[key] = value }
        document["starts_at"] = .string(event.schedule.startsAt)
        document["ends_at"] = event.schedule.endsAt.map(BSONValue.string) ?? .null
        document["tz"] = .string(event.schedule.timeZone)
        document["location"] = event.location.map(BSONValue.string) ?? .null
        document["recurrence"] = event.schedule.recurrence.map(BSONValue.string) ?? .null
        document["exdates"] = .array(event.schedule.exceptions.map(BSONValue.string))
        document["reminders"] = .array(event.schedule.reminders.map(BSONValue.string))
        document["announcement"] = event.announcement.map { .string($0.hex) } ?? .null
        document["next_reminder_at"] = event.dueAt.map(BSONValue.int64) ?? .null
        document["last_error"] = event.lastError.map(BSONValue.string) ?? .null
        document["created_by"] = event.sender["name"] ?? .null
        document["rota"] = .document(
            BSONDocument(
                event.rota.sorted { $0.key < $1.key }.map {
                    (key: $0.key, value: .array($0.value.map(BSONValue.string)))
                }))
        document["version"] = .int64(event.version)
        document["created_at"] = .int64(event.createdAt)
        document["updated_at"] = .int64(event.updatedAt)
        return document
    }

    /// An occurrence as listed.
    static func document(_ listed: EventService.ListedOccurrence, withEvent: Bool) -> BSONDocument {
        var document: BSONDocument = [
            "date": .string(listed.occurrence.date.description),
            "start": [
                "utc": .string(utc(listed.occurrence.instant)), "local": .string(listed.occurrence.local.description),
                "unix_ms": .int64(listed.occurrence.instant),
            ],
            "reminders": .array(
                listed.reminders.map { ["utc": .string(utc($0)), "unix_ms": .int64($0)] as BSONValue }),
        ]
        document["end"] =
            listed.endsAt.map { ["utc": .string(utc($0)), "unix_ms": .int64($0)] as BSONValue } ?? .null
        if withEvent {
            document["event"] = .string(listed.event.id.hex)
            document["title"] = listed.event.template["title"] ?? .null
            document["tz"] = .string(listed.event.schedule.timeZone)
        }
        return document
    }
}

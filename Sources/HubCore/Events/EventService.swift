import DAO
import Foundation
import HubTime
import Logging
import Mongo

/// Events: what `POST`/`GET`/`PUT`/`DELETE /event` share, and the reminder worker every replica runs.
///
/// An event is a schedule (`EventSchedule`) and the message fields its reminders are sent with (as `POST /message`
/// takes them: `MessageService` holds them to the send rules when the event is created or edited, and again when each
/// reminder is sent, as the event's last editor). Each reminder is a message in history, sent once across replicas:
/// the worker claims due events from the `due_at` index under a lease, sends each due reminder with an idempotency key
/// of the event, occurrence and lead (a worker that dies after sending leaves its successor nothing new to store),
/// then records the next reminder's time. An edit recomputes that time: every reminder not sent yet moves with it.
public struct EventService: Sendable {
    let events: EventDAO
    let messages: MessageService
    /// The groups an event's audience names, for who may read its calendar file.
    let groups: GroupDAO
    let now: UnixClock
    var audit: AuditLog?
    let logger: Logger

    /// How long a claim holds an event: another replica sends its reminders after this if this one dies.
    public var lease: Duration = .seconds(60)
    /// How often due reminders are looked for when none was due.
    public var poll: Duration = .seconds(1)
    /// The shortest pause between claims that took less than a batch.
    public var tick: Duration = .milliseconds(100)
    /// Events claimed at a time.
    public var batch = 256
    /// How many of a claim's events have their reminders sent at once: enough for their records and messages to
    /// gather in shared insert commands while the database answers.
    public var concurrency = 64

    public init(
        events: EventDAO, messages: MessageService, groups: GroupDAO, now: @escaping UnixClock, audit: AuditLog?,
        logger: Logger
    ) {
        self.events = events
        self.groups = groups
        self.messages = messages
        self.now = now
        self.audit = audit
        self.logger = logger
    }

    /// Makes a reminder's or announcement's submission from an event's message fields (`POST /message`'s reader).
    public typealias Compose = @Sendable (BSONDocument) throws -> MessageService.Submission

    /// What a client sends to create or replace an event.
    public struct Draft: Sendable {
        public var schedule: Event.Schedule
        /// The message fields, as given.
        public var template: BSONDocument
        public var location: String?
        /// Send the announcement (the message fields as they are) now.
        public var announce: Bool
        /// A recurring message: each occurrence sends the message as it is (`Event.isNotice`).
        public var isNotice: Bool

        public init(
            schedule: Event.Schedule, template: BSONDocument, location: String?, announce: Bool, isNotice: Bool = false
        ) {
            self.schedule = schedule
            self.template = template
            self.location = location
            self.announce = announce
            self.isNotice = isNotice
        }
    }

    /// An identity as an event keeps it, to send its reminders as.
    static func stored(_ identity: Identity) -> BSONDocument {
        var document: BSONDocument = [
            "name": .string(identity.name), "role": .string(identity.role.rawValue),
            "kind": .string(identity.kind == .token ? "token" : "user"), "direct": .bool(identity.direct),
        ]
        if let owner = identity.owner { document["owner"] = .string(owner) }
        return document
    }

    /// The identity an event's reminders are sent as; nil when it cannot be read.
    static func identity(of event: Event) -> Identity? {
        guard let name = event.sender["name"]?.stringValue,
            let role = event.sender["role"]?.stringValue.flatMap(Role.init(rawValue:))
        else { return nil }
        return Identity(
            name: name, role: role, kind: event.sender["kind"]?.stringValue == "token" ? .token : .user,
            direct: event.sender["direct"]?.boolValue ?? false, owner: event.sender["owner"]?.stringValue)
    }

    /// Creates an event from `draft` as `identity`: its schedule and message fields held to their rules, the
    /// announcement sent when asked (answering its msi_key), the first reminder due.
    /// - Throws: `EventRefusal`, `SendRefusal` (the message fields), `DAOError`.
    public func create(_ draft: Draft, compose: Compose, as identity: Identity) async throws -> Event {
        let schedule = try EventSchedule(draft.schedule)
        let submission = try compose(draft.template)
        _ = try await messages.destination(of: submission, as: identity)
        guard let span = schedule.span else { throw EventRefusal(.invalidSchedule, "the event has no occurrence") }
        let time = now()
        let id = ObjectID()
        var announcement: ObjectID?
        if draft.announce {
            announcement = try await messages.send(
                announcementSubmission(submission, id: id, schedule: schedule, location: draft.location), as: identity
            ).msiKey
        }
        let event = try await events.insert(
            id: id, schedule.stored, template: draft.template, location: draft.location, sender: Self.stored(identity),
            span: span, dueAt: schedule.nextReminder(after: time), handledThrough: time, announcement: announcement,
            isNotice: draft.isNotice)
        await audit?.record(
            action: "event.create", target: AuditTarget(kind: "event", id: event.id.hex),
            change: ["starts_at": .string(event.schedule.startsAt), "tz": .string(event.schedule.timeZone)])
        return event
    }

    /// Replaces event `id` with `draft` as `identity`: every reminder not sent yet moves to the new schedule and
    /// texts (those whose time passed before the edit are not sent), sent from now on as `identity`.
    /// - Throws: `EventRefusal` (`.eventNotFound`, `.editConflict`, `.invalidSchedule`), `SendRefusal`, `DAOError`.
    public func replace(id: ObjectID, with draft: Draft, compose: Compose, as identity: Identity) async throws -> Event
    {
        let schedule = try EventSchedule(draft.schedule)
        _ = try await messages.destination(of: try compose(draft.template), as: identity)
        guard let span = schedule.span else { throw EventRefusal(.invalidSchedule, "the event has no occurrence") }
        guard let before = try await events.event(id: id) else { throw Self.notFound(id) }
        let time = now()
        guard
            let event = try await events.replace(
                id: id, version: before.version, schedule.stored, template: draft.template, location: draft.location,
                sender: Self.stored(identity), span: span, dueAt: schedule.nextReminder(after: time),
                handledThrough: time)
        else { throw EventRefusal(.editConflict, "the event changed while it was edited; read it and try again") }
        await audit?.record(
            action: "event.replace", target: AuditTarget(kind: "event", id: id.hex),
            change: ["starts_at": .string(event.schedule.startsAt), "tz": .string(event.schedule.timeZone)])
        return event
    }

    /// The event `id`.
    /// - Throws: `EventRefusal.eventNotFound`, `DAOError`.
    public func event(id: ObjectID) async throws -> Event {
        guard let event = try await events.event(id: id) else { throw Self.notFound(id) }
        return event
    }

    /// Deletes event `id` as `identity`: no reminder of it is sent any more (those sent stay in history), and an
    /// announced event's announcement is corrected to say it is cancelled. `identity` must be able to send to the
    /// event's audience.
    /// - Throws: `EventRefusal.eventNotFound`, `SendRefusal` (the audience), `DAOError`.
    public func delete(id: ObjectID, compose: Compose, as identity: Identity) async throws {
        let event = try await event(id: id)
        _ = try await messages.destination(of: try compose(event.template), as: identity)
        guard try await events.delete(id: id) else { throw Self.notFound(id) }
        await audit?.record(action: "event.delete", target: AuditTarget(kind: "event", id: id.hex), change: [:])
        await announceCancellation(of: event, "Cancelled", as: identity)
    }

    /// Cancels the occurrence of event `id` on local date `date` as `identity`: it becomes an exception (no reminder
    /// of it is sent), and an announced event's announcement is corrected to say so. `identity` must be able to send
    /// to the event's audience.
    /// - Throws: `EventRefusal` (`.eventNotFound`, `.occurrenceNotFound`, `.editConflict`), `SendRefusal`, `DAOError`.
    public func cancel(id: ObjectID, on date: LocalDate, compose: Compose, as identity: Identity) async throws -> Event
    {
        let event = try await event(id: id)
        _ = try await messages.destination(of: try compose(event.template), as: identity)
        let schedule = try EventSchedule(event.schedule)
        guard let occurrence = schedule.recurrence.occurrence(on: date) else {
            throw EventRefusal(.occurrenceNotFound, "the event has no occurrence on \(date)")
        }
        var stored = event.schedule
        stored.exceptions.append(date.description)
        let changed = try await reschedule(event, to: stored, rota: nil)
        await audit?.record(
            action: "event.cancel_occurrence", target: AuditTarget(kind: "event", id: id.hex),
            change: ["date": .string(date.description)])
        let when = Self.when(occurrence, in: schedule.timeZone, zoneName: event.schedule.timeZone)
        await announceCancellation(of: event, "Cancelled: \(when)", as: identity)
        return changed
    }

    /// Names the persons of event `id`'s occurrence on `date` (a rota's night): that occurrence's reminders go to
    /// them alone, each naming the others (`{partners}` in the text); an empty list goes back to the event's audience.
    /// - Throws: `EventRefusal` (`.eventNotFound`, `.occurrenceNotFound`, `.editConflict`), `SendRefusal` when
    ///   `identity` may not send to those persons, `DAOError`.
    public func assign(
        _ persons: [String], to date: LocalDate, of id: ObjectID, compose: Compose, as identity: Identity
    ) async throws -> Event {
        let event = try await event(id: id)
        let schedule = try EventSchedule(event.schedule)
        guard schedule.recurrence.occurrence(on: date) != nil else {
            throw EventRefusal(.occurrenceNotFound, "the event has no occurrence on \(date)")
        }
        var rota = event.rota
        if persons.isEmpty {
            rota[date.description] = nil
        } else {
            var submission = try compose(event.template)
            submission.recipients = Recipients(persons: persons, groups: [], exceptPersons: [])
            submission.topicKey = ""
            _ = try await messages.destination(of: submission, as: identity)
            rota[date.description] = persons
        }
        let changed = try await reschedule(event, to: event.schedule, rota: rota)
        await audit?.record(
            action: "event.assign", target: AuditTarget(kind: "event", id: id.hex),
            change: ["date": .string(date.description), "persons": .array(persons.map(BSONValue.string))])
        return changed
    }

    /// Stores `event` with `schedule` (and `rota`), its pending reminders moved, as its version read.
    private func reschedule(_ event: Event, to schedule: Event.Schedule, rota: [String: [String]]?) async throws
        -> Event
    {
        let checked = try EventSchedule(schedule)
        guard let span = checked.span else { throw EventRefusal(.invalidSchedule, "the event has no occurrence left") }
        let time = now()
        guard
            let changed = try await events.replace(
                id: event.id, version: event.version, checked.stored, template: event.template,
                location: event.location, sender: event.sender, span: span, dueAt: checked.nextReminder(after: time),
                handledThrough: max(event.handledThrough, time), rota: rota)
        else { throw EventRefusal(.editConflict, "the event changed meanwhile; read it and try again") }
        return changed
    }

    /// Corrects an announced event's announcement to open with `notice` (the event or an occurrence cancelled), as
    /// `identity`; a failure is logged (the cancellation itself is stored).
    private func announceCancellation(of event: Event, _ notice: String, as identity: Identity) async {
        guard let announcement = event.announcement else { return }
        do {
            let stored = try await messages.message(msiKey: announcement, for: .caller(identity))
            _ = try await messages.correct(
                msiKey: announcement,
                with: MessageCorrection(desc: notice, message: notice + ". " + stored.message), as: identity)
        } catch {
            logger.warning(
                "an event's announcement could not be corrected to say it is cancelled",
                metadata: ["event": .string(event.id.hex), "error": .string("\(error)")])
        }
    }

    /// An occurrence as listed: its event, its local date (its id), its instants and its reminders' times.
    public struct ListedOccurrence: Sendable {
        public let event: Event
        public let occurrence: Recurrence.Occurrence
        public let endsAt: Int64?
        public let reminders: [Int64]
    }

    /// The occurrences of `event` that start in [`from`, `to`), at most `limit`.
    /// - Throws: `EventRefusal.invalidSchedule` for an event stored with a schedule this hub no longer reads.
    public func occurrences(of event: Event, from: Int64, to: Int64, limit: Int) throws -> [ListedOccurrence] {
        let schedule = try EventSchedule(event.schedule)
        let duration = schedule.durationMS
        return schedule.recurrence.occurrences(from: from, to: to, limit: limit).map { occurrence in
            ListedOccurrence(
                event: event, occurrence: occurrence, endsAt: schedule.end == nil ? nil : occurrence.instant + duration,
                reminders: schedule.leads.map { schedule.recurrence.instant(of: $0, before: occurrence) }.sorted())
        }
    }

    /// The occurrences of every event that start in [`from`, `to`), by start, at most `limit`.
    /// - Throws: `DAOError`.
    public func occurrences(from: Int64, to: Int64, limit: Int) async throws -> [ListedOccurrence] {
        let events = try await events.meeting(from: from, to: to, limit: limit)
        let all = events.flatMap { event in (try? occurrences(of: event, from: from, to: to, limit: limit)) ?? [] }
        return Array(all.sorted { $0.occurrence.instant < $1.occurrence.instant }.prefix(limit))
    }

    /// Whether `device` is of the event's audience: its person named, or a member of a group named; any device for a
    /// topic's event (the cube says who may subscribe).
    /// - Throws: `DAOError`.
    public func isFor(_ device: Device, event: Event) async throws -> Bool {
        guard let to = event.template["to"]?.documentValue else { return true }
        guard let person = device.person else { return false }
        let excepted = to[path: "except.persons"]?.arrayValue?.contains(.string(person)) ?? false
        if excepted { return false }
        if to["persons"]?.arrayValue?.contains(.string(person)) == true { return true }
        for group in to["groups"]?.arrayValue?.compactMap(\.stringValue) ?? [] {
            if try await groups.isMember(person, of: group) { return true }
        }
        return false
    }

    static func notFound(_ id: ObjectID) -> EventRefusal {
        EventRefusal(.eventNotFound, "no event has the id \(id.hex)")
    }

    // MARK: Texts

    /// When `occurrence` starts, as its reminder says it: "Monday 1 March 2027, 08:00 (Europe/Berlin)".
    static func when(_ occurrence: Recurrence.Occurrence, in zone: TimeZone, zoneName: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.timeZone = zone
        formatter.dateFormat = "EEEE d MMMM yyyy, HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: Double(occurrence.instant) / 1000)) + " (\(zoneName))"
    }

    /// The data a reminder or announcement of `occurrence` carries, beside the message's own: the event, the
    /// occurrence's date and start (Unix ms, local, zone), and the calendar file's path (`ics`).
    static func eventData(_ eventID: ObjectID, _ occurrence: Recurrence.Occurrence, zone: String) -> [String: String] {
        [
            "event": eventID.hex, "ics": "/event/\(eventID.hex).ics", "starts_at": String(occurrence.instant),
            "starts_local": occurrence.local.description, "tz": zone, "occurrence": occurrence.date.description,
        ]
    }

    /// The announcement: the message fields as given, with the next occurrence's (or the first's) in the data.
    func announcementSubmission(
        _ submission: MessageService.Submission, id: ObjectID, schedule: EventSchedule, location: String?
    ) -> MessageService.Submission {
        var submission = submission
        if let first = schedule.recurrence.first(atOrAfter: now()) ?? schedule.recurrence.first(atOrAfter: .min / 2) {
            submission.data.merge(Self.eventData(id, first, zone: schedule.stored.timeZone)) { own, _ in own }
        }
        if let location { submission.data["location"] = submission.data["location"] ?? location }
        return submission
    }

    /// A reminder of `event`: its title, its text opened by when the occurrence starts (and where), the event's
    /// and occurrence's fields in the data, sent now.
    func reminderSubmission(
        _ submission: MessageService.Submission, event: Event, schedule: EventSchedule,
        reminder: EventSchedule.Reminder
    ) -> MessageService.Submission {
        var submission = submission
        submission.sendAt = nil
        guard !event.isNotice else {
            // A recurring message goes as it is, with its series and occurrence in the data.
            submission.data["series"] = event.id.hex
            submission.data["occurrence"] = reminder.occurrence.date.description
            return submission
        }
        var when = "Starts " + Self.when(reminder.occurrence, in: schedule.timeZone, zoneName: event.schedule.timeZone)
        if let location = event.location { when += " at \(location)" }
        // The pop-up says when (`desc`); the text opens with it.
        submission.message = when + ". " + submission.message
        submission.desc = when
        submission.data.merge(Self.eventData(event.id, reminder.occurrence, zone: event.schedule.timeZone)) { own, _ in
            own
        }
        submission.data["reminder"] = reminder.lead.description
        submission.sendAt = nil
        return submission
    }

    /// A reminder's messages: the one to the event's audience (`{partners}` left out), or, for a rota's occurrence,
    /// one to each of its persons naming the others in `{partners}` ("Ann and Ben"), each with its person.
    static func rotaTexts(_ submission: MessageService.Submission, persons: [String]?) -> [(
        String?, MessageService.Submission
    )] {
        func partners(_ names: [String]) -> String {
            names.count <= 1 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + names.last!
        }
        func filled(_ submission: MessageService.Submission, _ names: String) -> MessageService.Submission {
            var filled = submission
            filled.message = filled.message.replacingOccurrences(of: "{partners}", with: names)
            filled.title = filled.title.replacingOccurrences(of: "{partners}", with: names)
            return filled
        }
        guard let persons, !persons.isEmpty else { return [(nil, filled(submission, "nobody else"))] }
        return persons.map { person in
            var one = filled(
                submission,
                partners(persons.filter { $0 != person }).isEmpty
                    ? "nobody else" : partners(persons.filter { $0 != person }))
            one.recipients = Recipients(persons: [person], groups: [], exceptPersons: [])
            one.topicKey = ""
            one.data["rota"] = persons.joined(separator: ",")
            return (person, one)
        }
    }

    // MARK: The reminder worker

    /// This process's name in the claims it takes.
    static let owner = "events-\(ProcessInfo.processInfo.hostName)-\(getpid())-\(ObjectID().hex.suffix(8))"

    /// Claims and sends due reminders until the task is cancelled: at once again after a full batch; else when the
    /// next reminder is due (the first entry of the `due_at` index's range up to `poll` from now), at most `poll`
    /// later (an event made meanwhile on another replica); after a growing wait while the database fails.
    public func reminderLoop(compose: @escaping Compose) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let claimed = try await sendDueReminders(compose: compose)
                failures = 0
                if claimed < batch {
                    // Due already but not claimed: another worker holds it; wait the whole pause. Never sooner than
                    // `tick`: while reminders fall due one after another, a claim takes those of a tick together.
                    let untilNext = (try await events.nextDue(by: now() + poll.milliseconds)).map { $0 - now() } ?? .max
                    let wait =
                        untilNext > 0 ? min(poll.milliseconds, max(tick.milliseconds, untilNext)) : poll.milliseconds
                    try? await Task.sleep(for: .milliseconds(wait))
                }
            } catch {
                failures += 1
                logger.warning("due event reminders could not be read or recorded", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(min(30_000, 500 << min(failures, 6))))
            }
        }
    }

    /// Claims up to `batch` events with a reminder due and sends their due reminders; returns how many it claimed.
    /// - Throws: `DAOError` when the database fails (what was sent is recorded, or sent again as the same message).
    @discardableResult
    public func sendDueReminders(compose: @escaping Compose) async throws -> Int {
        let time = now()
        guard
            let claim = try await events.claimDue(
                owner: Self.owner, now: time, leaseMS: lease.milliseconds, limit: batch)
        else { return 0 }
        // A claim's events side by side, `concurrency` at a time: a minute with thousands of reminders due keeps up.
        // What was done is recorded for the whole claim in one write, also when an event's reminders failed to be
        // stored (the others' records are not lost; that event is claimed again once its lease runs out).
        var handled: [EventDAO.Handled] = []
        var failure: (any Error)?
        await withTaskGroup(of: Result<EventDAO.Handled?, any Error>.self) { group in
            var running = 0
            func take(_ result: Result<EventDAO.Handled?, any Error>) {
                switch result {
                case .success(let record): if let record { handled.append(record) }
                case .failure(let error): failure = failure ?? error
                }
            }
            for event in claim.events {
                if running >= concurrency, let result = await group.next() {
                    take(result)
                    running -= 1
                }
                group.addTask {
                    do {
                        if Task.isCancelled {
                            try await events.release(event, lease: claim.lease)
                            return .success(nil)
                        }
                        return .success(try await sendReminders(of: event, compose: compose))
                    } catch {
                        return .failure(error)
                    }
                }
                running += 1
            }
            for await result in group { take(result) }
        }
        try await events.recordHandled(handled, lease: claim.lease)
        if let failure { throw failure }
        return claim.events.count
    }

    /// How long a reminder the hub could not store yet (the database failing, the relay behind) waits to be tried again.
    static let retryDelayMS: Int64 = 1_000

    /// Sends `event`'s reminders due by now in time order, once each (the idempotency key); returns what to record:
    /// how far they are handled and the next one's time. A reminder that cannot be stored now (the database fails,
    /// the relay is behind) is tried again a moment later with those after it, never skipped; one refused for good
    /// (its sender may no longer send to the audience) is recorded on the event and the others go on.
    private func sendReminders(of event: Event, compose: Compose) async throws -> EventDAO.Handled {
        let time = now()
        let schedule: EventSchedule
        do {
            schedule = try EventSchedule(event.schedule)
        } catch {
            return EventDAO.Handled(
                event, handledThrough: time, dueAt: nil, error: "the schedule is not readable: \(error)")
        }
        var failure: String?
        var handled = time
        var retryAt: Int64?
        reminders: for reminder in schedule.reminders(after: event.handledThrough, through: time)
        where schedule.isStillTimely(reminder, now: time) {
            do {
                guard let identity = Self.identity(of: event) else { throw EventRefusal(.invalidID, "no sender") }
                let submission = reminderSubmission(
                    try compose(event.template), event: event, schedule: schedule, reminder: reminder)
                let key = "event-\(event.id.hex)-\(reminder.occurrence.date)-\(reminder.lead)"
                for (person, text) in Self.rotaTexts(
                    submission, persons: event.rota[reminder.occurrence.date.description])
                {
                    _ = try await messages.send(
                        text, as: identity, idempotencyKey: person.map { key + "-" + $0 } ?? key)
                }
            } catch let error where Self.isTransient(error) {
                // Not stored: this one and those after it are tried again shortly (a second send of one stored
                // already finds its idempotency key).
                handled = reminder.at - 1
                retryAt = now() + Self.retryDelayMS
                logger.warning(
                    "an event reminder could not be stored yet; it is tried again",
                    metadata: ["event": .string(event.id.hex), "error": .string("\(error)")])
                break reminders
            } catch {
                failure = "\(error)"
                logger.warning(
                    "an event reminder was refused",
                    metadata: ["event": .string(event.id.hex), "error": .string("\(error)")])
            }
        }
        let next = retryAt ?? schedule.nextReminder(after: time)
        return EventDAO.Handled(event, handledThrough: handled, dueAt: next, error: failure)
    }

    /// Whether `error` says the reminder could not be stored now but may be a moment later.
    static func isTransient(_ error: any Error) -> Bool {
        switch error {
        case let error as DAOError: error.code == .unavailable || error.code == .outcomeUnknown
        case let error as SendRefusal: error.code == .relayBehind
        default: false
        }
    }

}

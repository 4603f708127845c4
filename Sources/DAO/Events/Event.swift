import Mongo

/// A scheduled event as stored in `events`: when it is (a local date-time in an IANA zone, maybe recurring), what its
/// reminders say and to whom (the message fields of `POST /message`, as given), and where its reminders stand (the
/// next one due, the time up to which they were handled). `EventDAO` reads and writes it.
public struct Event: Sendable {
    /// The fields a client gave and reads back, as stored.
    public struct Schedule: Sendable, Equatable {
        /// The first occurrence's local start, "YYYY-MM-DDTHH:MM:SS".
        public var startsAt: String
        /// Its local end, when given.
        public var endsAt: String?
        /// The IANA zone the times are read in.
        public var timeZone: String
        /// An RFC 5545 RRULE value (without `RRULE:`); nil: one occurrence.
        public var recurrence: String?
        /// Local dates without an occurrence ("YYYY-MM-DD"), cancelled ones included.
        public var exceptions: [String]
        /// Reminder lead times, ISO 8601 durations ("P1D", "PT30M").
        public var reminders: [String]

        public init(
            startsAt: String, endsAt: String? = nil, timeZone: String, recurrence: String? = nil,
            exceptions: [String] = [], reminders: [String] = []
        ) {
            self.startsAt = startsAt
            self.endsAt = endsAt
            self.timeZone = timeZone
            self.recurrence = recurrence
            self.exceptions = exceptions
            self.reminders = reminders
        }
    }

    public var id: ObjectID
    public var schedule: Schedule
    /// The message fields reminders are sent with (`title`, `message`, `topic_key` or `to`, `data`, `urgency`,
    /// `ack`, ...), as `POST /message` takes them.
    public var template: BSONDocument
    /// Where it is, shown in its reminders; nil: nowhere said.
    public var location: String?
    /// Who created or last edited it, as reminders are sent: `{name, role, kind, direct, owner}`.
    public var sender: BSONDocument
    /// The announcement's msi_key, when it was announced.
    public var announcement: ObjectID?
    /// Changed by each edit: a reminder worker holding the event records nothing over an edit.
    public var version: Int64
    /// The next reminder's time (Unix ms); nil: none is to come.
    public var dueAt: Int64?
    /// Reminders up to this time (Unix ms) are handled: sent, or passed before an edit.
    public var handledThrough: Int64
    /// Occurrences that name their own persons (a rota): local date → person ids.
    public var rota: [String: [String]]
    public var createdAt: Int64
    public var updatedAt: Int64
    /// The last reminder the hub could not send, and why; nil when the last went.
    public var lastError: String?
    /// A recurring message (`POST /message` with `recurrence`): each occurrence sends the message as it is, at its
    /// time, rather than a reminder of an event.
    public var isNotice: Bool

    public init?(document: BSONDocument) {
        guard let id = document["_id"]?.objectIDValue,
            let startsAt = document["starts_at"]?.stringValue,
            let timeZone = document["tz"]?.stringValue,
            let template = document["template"]?.documentValue
        else { return nil }
        self.id = id
        self.schedule = Schedule(
            startsAt: startsAt, endsAt: document["ends_at"]?.stringValue, timeZone: timeZone,
            recurrence: document["recurrence"]?.stringValue,
            exceptions: document["exdates"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            reminders: document["reminders"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        self.template = template
        self.location = document["location"]?.stringValue
        self.sender = document["sender"]?.documentValue ?? [:]
        self.announcement = document["announcement"]?.objectIDValue
        self.version = document["version"]?.int64Value ?? 0
        self.dueAt = document["due_at"]?.int64Value
        self.handledThrough = document["handled_through"]?.int64Value ?? 0
        var rota: [String: [String]] = [:]
        for (date, persons) in document["rota"]?.documentValue ?? [:] {
            rota[date] = persons.arrayValue?.compactMap(\.stringValue) ?? []
        }
        self.rota = rota
        self.createdAt = document["created_at"]?.int64Value ?? 0
        self.updatedAt = document["updated_at"]?.int64Value ?? 0
        self.lastError = document["last_error"]?.stringValue
        self.isNotice = document["notice"]?.boolValue ?? false
    }

    /// The fields an edit replaces: the schedule, the template, the location and the sender.
    static func editable(
        _ schedule: Schedule, template: BSONDocument, location: String?, sender: BSONDocument
    ) -> BSONDocument {
        var fields: BSONDocument = [
            "starts_at": .string(schedule.startsAt), "tz": .string(schedule.timeZone),
            "exdates": .array(schedule.exceptions.map(BSONValue.string)),
            "reminders": .array(schedule.reminders.map(BSONValue.string)),
            "template": .document(template), "sender": .document(sender),
        ]
        fields["ends_at"] = schedule.endsAt.map(BSONValue.string) ?? .null
        fields["recurrence"] = schedule.recurrence.map(BSONValue.string) ?? .null
        fields["location"] = location.map(BSONValue.string) ?? .null
        return fields
    }
}

import HubTime
import Mongo

/// Events in `events`, one document an event, and their reminders as a leased queue: an event is due when its next
/// reminder is (`due_at`, on the `due_at` index, which holds only events with a reminder to come), so the reminder
/// worker of any replica claims what is due without reading events or messages (`LeasedQueue`). Every write of the
/// worker names its lease and the event's `version`: an edit in between moves the reminders and the worker's record
/// matches nothing. Listing reads the events whose span meets a range (`first_at`, `last_at`).
public struct EventDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The reminder queue (events with a reminder to come), and the events a range of time meets: those that end
    /// after its start (a series without end has no `last_at`).
    /// The queue's index is a whole one: the embedded database reads a partial index's collection instead, whatever
    /// the query (events without a reminder to come have no `due_at`, and a range of it never meets them).
    static let indexes = [
        IndexModel(keys: ["due_at": 1], name: "due"),
        IndexModel(keys: ["last_at": 1], name: "last_at"),
        IndexModel(keys: ["first_at": 1], name: "first_at"),
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.events)
        self.now = now
    }

    /// Due at `now`, leased or not.
    static func due(now: Int64) -> BSONDocument { ["due_at": ["$lte": .int64(now)]] }

    var queue: LeasedQueue { LeasedQueue(collection: collection, prefix: "", dueField: "due_at", due: Self.due(now:)) }

    /// Where an event's occurrences lie: the first's instant and the last's (nil: the series has no end).
    public struct Span: Sendable, Equatable {
        public var first: Int64
        public var last: Int64?

        public init(first: Int64, last: Int64?) {
            self.first = first
            self.last = last
        }
    }

    /// Stores a new event; returns it as stored.
    /// - Throws: `DAOError`.
    public func insert(
        id: ObjectID = ObjectID(), _ schedule: Event.Schedule, template: BSONDocument, location: String?,
        sender: BSONDocument, span: Span,
        dueAt: Int64?, handledThrough: Int64, announcement: ObjectID? = nil, isNotice: Bool = false
    ) async throws -> Event {
        let time = now()
        var document: BSONDocument = ["_id": .objectID(id)]
        for (key, value) in Event.editable(schedule, template: template, location: location, sender: sender) {
            document[key] = value
        }
        document["version"] = 1
        document["handled_through"] = .int64(handledThrough)
        if let dueAt { document["due_at"] = .int64(dueAt) }
        if let announcement { document["announcement"] = .objectID(announcement) }
        document["first_at"] = .int64(span.first)
        document["last_at"] = span.last.map(BSONValue.int64) ?? .null
        document["rota"] = [:]
        if isNotice { document["notice"] = true }
        document["created_at"] = .int64(time)
        document["updated_at"] = .int64(time)
        _ = try await mapErrors { try await collection.insertOne(document) }
        guard let event = Event(document: document) else { throw DAOError(.database, "an event could not be read") }
        return event
    }

    /// The event `id`, or nil.
    /// - Throws: `DAOError`.
    public func event(id: ObjectID) async throws -> Event? {
        try await mapErrors { try await collection.findOne(["_id": .objectID(id)]).flatMap(Event.init(document:)) }
    }

    /// Replaces the editable fields of event `id` while it is at `version`, its reminders moved: due next at `dueAt`,
    /// those up to `handledThrough` handled, any worker's lease on it ended. Returns the event as stored, or nil when
    /// it is gone or was edited since `version` was read.
    /// - Throws: `DAOError`.
    public func replace(
        id: ObjectID, version: Int64, _ schedule: Event.Schedule, template: BSONDocument, location: String?,
        sender: BSONDocument, span: Span, dueAt: Int64?, handledThrough: Int64, rota: [String: [String]]? = nil
    ) async throws -> Event? {
        var set = Event.editable(schedule, template: template, location: location, sender: sender)
        set["version"] = .int64(version + 1)
        set["handled_through"] = .int64(handledThrough)
        set["first_at"] = .int64(span.first)
        set["last_at"] = span.last.map(BSONValue.int64) ?? .null
        set["updated_at"] = .int64(now())
        if let rota {
            set["rota"] = .document(
                BSONDocument(rota.map { (key: $0.key, value: .array($0.value.map(BSONValue.string))) }))
        }
        var unset: BSONDocument = queue.endingLease()
        if let dueAt { set["due_at"] = .int64(dueAt) } else { unset["due_at"] = "" }
        let result = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(id), "version": .int64(version)],
                ["$set": .document(set), "$unset": .document(unset)])
        }
        guard result.matchedCount > 0 else { return nil }
        return try await event(id: id)
    }

    /// Deletes event `id`; whether it existed.
    /// - Throws: `DAOError`.
    public func delete(id: ObjectID) async throws -> Bool {
        try await mapErrors { try await collection.deleteOne(["_id": .objectID(id)]) } > 0
    }

    /// The events whose span meets [`from`, `to`): those ending at or after `from` and starting before `to`, and the
    /// series without end that start before `to`; at most `limit`, by start. Each with its schedule and title only
    /// (`listedFields`): a listing expands occurrences and names them, and reads no event's message or rota.
    /// - Throws: `DAOError`.
    public func meeting(from: Int64, to: Int64, limit: Int) async throws -> [Event] {
        try await mapErrors {
            let ending = try await collection.find(
                ["last_at": ["$gte": .int64(from)], "first_at": ["$lt": .int64(to)]],
                options: FindOptions(projection: Self.listedFields, sort: ["first_at": 1], limit: Int64(limit)))
            let endless = try await collection.find(
                ["last_at": .null, "first_at": ["$lt": .int64(to)]],
                options: FindOptions(projection: Self.listedFields, sort: ["first_at": 1], limit: Int64(limit)))
            return (ending + endless).compactMap(Event.init(document:))
        }
    }

    /// The fields a listing of occurrences reads: the schedule and the title.
    static let listedFields: BSONDocument = [
        "starts_at": 1, "ends_at": 1, "tz": 1, "recurrence": 1, "exdates": 1, "reminders": 1, "template.title": 1,
    ]

    // MARK: The reminder queue

    /// Leases up to `limit` of the most overdue events for `owner` until `now + leaseMS`.
    /// - Throws: `DAOError`.
    public func claimDue(owner: String, now: Int64, leaseMS: Int64, limit: Int) async throws -> (
        lease: String, events: [Event]
    )? {
        try await mapErrors {
            guard let claim = try await queue.claim(owner: owner, now: now, leaseMS: leaseMS, limit: limit) else {
                return nil
            }
            return (claim.lease, claim.documents.compactMap(Event.init(document:)))
        }
    }

    /// What the reminder worker did with a claimed event: its reminders up to `handledThrough` (Unix ms) are
    /// handled, the next is due at `dueAt` (nil: none to come), and the last failure (nil: none).
    /// It names the event by its `_id` and the version the worker read, which its record must still find.
    public struct Handled: Sendable {
        public let event: ObjectID
        public let version: Int64
        public let handledThrough: Int64
        public let dueAt: Int64?
        public let error: String?

        public init(_ event: Event, handledThrough: Int64, dueAt: Int64?, error: String?) {
            self.event = event.id
            self.version = event.version
            self.handledThrough = handledThrough
            self.dueAt = dueAt
            self.error = error
        }
    }

    /// Records what was done with each of a claim's events, ending `lease` on them, in one command (a bulk write):
    /// an event whose lease or version no longer holds (it was edited or taken over meanwhile) is left as it is.
    /// Returns how many were recorded.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recordHandled(_ handled: [Handled], lease: String) async throws -> Int {
        let statements = handled.map { record in
            var set: BSONDocument = ["handled_through": .int64(record.handledThrough)]
            var unset = queue.endingLease()
            if let dueAt = record.dueAt { set["due_at"] = .int64(dueAt) } else { unset["due_at"] = "" }
            if let error = record.error { set["last_error"] = .string(error) } else { unset["last_error"] = "" }
            return UpdateStatement(
                filter: [
                    "_id": .objectID(record.event), "lease_owner": .string(lease),
                    "version": .int64(record.version),
                ],
                update: ["$set": .document(set), "$unset": .document(unset)])
        }
        return try await mapErrors { Int(try await collection.bulkUpdate(statements).matchedCount) }
    }

    /// The earliest reminder time of any event due by `horizon` (Unix ms), leased or not; nil when none is due by then:
    /// a range of the `due_at` index that holds only what falls due before the worker would look again (the embedded
    /// database reads every document a range matches whatever the limit: the first entry of the whole index would
    /// cost it every event with a reminder to come).
    /// - Throws: `DAOError`.
    public func nextDue(by horizon: Int64) async throws -> Int64? {
        try await mapErrors {
            try await collection.findOne(
                Self.due(now: horizon), projection: ["due_at": 1, "_id": 0], sort: ["due_at": 1])
        }?["due_at"]?.int64Value
    }

    /// Ends `lease` on `event` without recording anything: a worker stopping before it did the work.
    /// - Throws: `DAOError`.
    public func release(_ event: Event, lease: String) async throws {
        try await mapErrors { try await queue.release([.objectID(event.id)], leases: [lease]) }
    }
}

import HubTime
import Mongo

/// How a person wants the messages of a subject or group: at once (the default, never stored), in the day's digest,
/// or not as notifications at all.
public enum DeliveryMode: String, Sendable, CaseIterable {
    case instant, digest, off
}

/// What a delivery choice is about: a subject (its topic key) or a group (its id).
public enum DeliveryScope: String, Sendable, CaseIterable {
    case subject, group
}

/// A person's settings, which follow them to every device they bind: quiet hours, language, the hour of their digest
/// and their delivery choices (instant ones are not stored).
public struct PersonSettings: Sendable, Equatable {
    public var person: String
    public var quietHours: QuietHours?
    public var locale: String?
    /// "HH:MM" in the person's zone (their quiet hours' zone, else the school's); nil: the school's `DIGEST_HOUR`.
    public var digestHour: String?
    /// Per scope, per topic key or group id, every mode other than instant.
    public var delivery: [DeliveryScope: [String: DeliveryMode]]

    public init(
        person: String, quietHours: QuietHours? = nil, locale: String? = nil, digestHour: String? = nil,
        delivery: [DeliveryScope: [String: DeliveryMode]] = [:]
    ) {
        self.person = person
        self.quietHours = quietHours
        self.locale = locale
        self.digestHour = digestHour
        self.delivery = delivery
    }
}

/// A person's settings in two small collections: `person_settings`, one document per person (`_id` the person id:
/// quiet hours, locale, digest hour), and `person_deliveries`, one document per choice other than instant (`_id`
/// person, scope and id; topic keys and group ids are values, never field names, so a group id with a dot is stored
/// as it is). Every change names its fields (`$set`/`$unset`, an upsert or a delete by `_id`): never a read, change
/// and write back, so two devices changing different settings at once both land.
public struct PersonSettingsDAO: Sendable {
    let settings: MongoCollection
    let deliveries: MongoCollection
    let now: UnixClock

    static let deliveryIndexes = [
        IndexModel(keys: ["person": 1], name: "person"),
        // Who chose what for one subject or group, a range of persons at a time (the fan-out's batches).
        IndexModel(keys: ["scope": 1, "id": 1, "person": 1], name: "scope.id.person"),
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.settings = database.collection(CollectionName.personSettings)
        self.deliveries = database.collection(CollectionName.personDeliveries)
        self.now = now
    }

    /// The settings of `person` (empty ones when none were ever set).
    /// - Throws: `DAOError`.
    public func settings(of person: String) async throws -> PersonSettings {
        try await settings(of: [person])[person] ?? PersonSettings(person: person)
    }

    /// The settings of each of `persons` (those without any get the defaults), in two reads of 1,000 persons at a
    /// time: the person-wide fields by `_id`, the delivery choices on the `person` index.
    /// - Throws: `DAOError`.
    public func settings(of persons: [String]) async throws -> [String: PersonSettings] {
        var found: [String: PersonSettings] = [:]
        for person in persons { found[person] = PersonSettings(person: person) }
        let unique = Array(found.keys)
        for start in stride(from: 0, to: unique.count, by: 1_000) {
            let ids = BSONValue.array(unique[start..<min(start + 1_000, unique.count)].map(BSONValue.string))
            try await mapErrors {
                for document in try await self.settings.find(["_id": ["$in": ids]]) {
                    guard let person = document["_id"]?.stringValue else { continue }
                    if let quiet = document["quiet_hours"]?.documentValue, let from = quiet["from"]?.stringValue,
                        let to = quiet["to"]?.stringValue, let tz = quiet["tz"]?.stringValue
                    {
                        found[person]?.quietHours = try? QuietHours.parse(from: from, to: to, tz: tz).get()
                    }
                    found[person]?.locale = document["locale"]?.stringValue
                    found[person]?.digestHour = document["digest_hour"]?.stringValue
                }
                for document in try await deliveries.find(["person": ["$in": ids]]) {
                    guard let person = document["person"]?.stringValue,
                        let scope = document["scope"]?.stringValue.flatMap(DeliveryScope.init(rawValue:)),
                        let id = document["id"]?.stringValue,
                        let mode = document["mode"]?.stringValue.flatMap(DeliveryMode.init(rawValue:))
                    else { continue }
                    found[person]?.delivery[scope, default: [:]][id] = mode
                }
            }
        }
        return found
    }

    /// A change of the person-wide fields: nil leaves a field as it is, `.some(nil)` clears it.
    public struct Change: Sendable {
        public var quietHours: QuietHours??
        public var locale: String??
        public var digestHour: String??

        public init(quietHours: QuietHours?? = nil, locale: String?? = nil, digestHour: String?? = nil) {
            self.quietHours = quietHours
            self.locale = locale
            self.digestHour = digestHour
        }

        var isEmpty: Bool { quietHours == nil && locale == nil && digestHour == nil }
    }

    /// Writes the fields `change` names for `person`, and nothing else.
    /// - Throws: `DAOError`.
    public func apply(_ change: Change, to person: String) async throws {
        guard !change.isEmpty else { return }
        var set: BSONDocument = ["updated_at": .int64(now())]
        var unset: BSONDocument = [:]
        if let quietHours = change.quietHours {
            if let quietHours {
                set["quiet_hours"] = [
                    "from": .string(quietHours.fromText), "to": .string(quietHours.toText),
                    "tz": .string(quietHours.timeZoneID),
                ]
            } else {
                unset["quiet_hours"] = ""
            }
        }
        if let locale = change.locale {
            if let locale { set["locale"] = .string(locale) } else { unset["locale"] = "" }
        }
        if let digestHour = change.digestHour {
            if let digestHour { set["digest_hour"] = .string(digestHour) } else { unset["digest_hour"] = "" }
        }
        var update: BSONDocument = ["$set": .document(set)]
        if !unset.isEmpty { update["$unset"] = .document(unset) }
        _ = try await mapErrors {
            try await settings.updateOne(["_id": .string(person)], update, options: UpdateOptions(upsert: true))
        }
    }

    /// Of `persons`, those who chose one of `modes` for `id` in `scope`: one range read of the choices for it (from
    /// the first to the last of `persons`), the others left out here. Instant is never stored: asking for it finds
    /// nobody.
    /// - Throws: `DAOError`.
    public func choosing(_ modes: Set<DeliveryMode>, _ persons: [String], scope: DeliveryScope, id: String)
        async throws -> Set<String>
    {
        let wanted = Set(persons)
        let stored = Set(modes.map(\.rawValue))
        guard !modes.subtracting([.instant]).isEmpty, let range = KeyRange.bounds(of: wanted) else { return [] }
        let documents = try await mapErrors {
            try await deliveries.find(
                ["scope": .string(scope.rawValue), "id": .string(id), "person": range],
                options: FindOptions(projection: ["person": 1, "mode": 1, "_id": 0]))
        }
        var chosen: Set<String> = []
        for document in documents where stored.contains(document["mode"]?.stringValue ?? "") {
            if let person = document["person"]?.stringValue, wanted.contains(person) { chosen.insert(person) }
        }
        return chosen
    }

    /// Whether some person chose `digest` or `off` for the subject of `topicKey` (one read on the `scope.id.person`
    /// index): whether its messages' notifications leave a held topic out.
    /// - Throws: `DAOError`.
    public func anyHolding(subject topicKey: String) async throws -> Bool {
        try await mapErrors {
            try await deliveries.find(
                ["scope": .string(DeliveryScope.subject.rawValue), "id": .string(topicKey)],
                options: FindOptions(projection: ["_id": 1], limit: 1))
        }.isEmpty == false
    }

    /// Sets how `person` wants the messages of `id` in `scope`: instant removes the choice (the default).
    /// - Throws: `DAOError`.
    public func setDelivery(_ mode: DeliveryMode, scope: DeliveryScope, id: String, for person: String) async throws {
        let key: BSONValue = .string("\(person)\u{1F}\(scope.rawValue)\u{1F}\(id)")
        try await mapErrors {
            if mode == .instant {
                _ = try await deliveries.deleteOne(["_id": key])
                return
            }
            _ = try await deliveries.updateOne(
                ["_id": key],
                [
                    "$set": [
                        "person": .string(person), "scope": .string(scope.rawValue), "id": .string(id),
                        "mode": .string(mode.rawValue), "updated_at": .int64(now()),
                    ]
                ], options: UpdateOptions(upsert: true))
        }
    }
}

import HubTime
import Mongo

/// Registered devices, in msi-hub's `devices` collection: one per FCM registration (a unique index), found by
/// id, authenticated by the hash of their secret.
public struct DeviceDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// One device per registration; unregistered devices by age, for their removal; active devices by platform,
    /// counted from the index alone (`countByPlatform`, for metrics and audiences), never by reading the devices;
    /// a person's devices, for sends to persons and groups and for an admin's list of them; a secret's device.
    static let indexes = [
        IndexModel(keys: ["registration": 1], name: "registration", unique: true),
        IndexModel(keys: ["state": 1, "unregistered_at": 1], name: "state.unregistered_at"),
        IndexModel(keys: ["state": 1, "platform": 1], name: "state.platform"),
        IndexModel(keys: ["person": 1], name: "person"),
        // A device on a route that names no device (a room's post) is found by its secret's hash.
        IndexModel(keys: ["secret_hash": 1], name: "secret_hash"),
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.devices)
        self.now = now
    }

    /// Inserts a new device for `registration`, with an id and a secret of its own. A device that has the
    /// registration already is retired (deleted, so its id and secret stop working) and the new one takes its place:
    /// the unique index lets one device in, so of concurrent registrations of one token exactly one stays, and a
    /// device inserted by another call meanwhile is retired in turn, once. A new registration costs one insert.
    /// Returns the new device and, for a known registration, the ids this call retired (empty when another call
    /// retired them first); nil when the registration was new.
    /// - Throws: `DAOError` (`.duplicate` when other registrations of the token kept taking the place).
    public func register(
        registration: String, platform: Platform, locale: String?, appVersion: String?,
        secretHash: String
    ) async throws -> (device: Device, retired: [ObjectID]?) {
        var retired: [ObjectID]?
        for attempt in 0..<3 {
            let time = now()
            var document: BSONDocument = [
                "_id": .objectID(ObjectID()), "registration": .string(registration),
                "platform": .string(platform.rawValue), "secret_hash": .string(secretHash), "state": "active",
                "created_at": .int64(time), "updated_at": .int64(time),
            ]
            if let locale { document["locale"] = .string(locale) }
            if let appVersion { document["app_version"] = .string(appVersion) }
            do {
                _ = try await mapErrors { try await collection.insertOne(document) }
                guard let device = Device(document: document) else { break }
                return (device, retired)
            } catch let error as DAOError where error.code == .duplicate && attempt < 2 {
                // Known: the device that has it is retired, by its id, so a device that replaced it meanwhile is
                // left to the next round.
                var ids = retired ?? []
                if let holder = try await holder(of: registration),
                    try await mapErrors({
                        try await collection.deleteOne([
                            "_id": .objectID(holder.id),
                            "registration": .string(registration),
                        ])
                    }) > 0
                {
                    ids.append(holder.id)
                }
                retired = ids
            }
        }
        throw DAOError(.database, "the registered device did not read back")
    }

    /// Gives the device that has `registration` a new secret, a platform, locale and app version, and makes it
    /// active again, when `currentHash` is the hash of its current secret (one atomic update: the proof and the
    /// change cannot be separated by another registration), then reads it back by its registration (both on an
    /// index: never a `findAndModify`, which the embedded database answers by reading the whole collection). Nil when
    /// no device has the registration with that secret.
    /// - Throws: `DAOError`.
    public func renew(
        registration: String, provenBy currentHash: String, secretHash: String, platform: Platform,
        locale: String?, appVersion: String?
    ) async throws -> Device? {
        var set: BSONDocument = [
            "platform": .string(platform.rawValue), "secret_hash": .string(secretHash), "state": "active",
            "updated_at": .int64(now()),
        ]
        if let locale { set["locale"] = .string(locale) }
        if let appVersion { set["app_version"] = .string(appVersion) }
        // An equality on the hash, not on the secret: timing reveals nothing of a secret whose hash it cannot steer.
        return try await mapErrors { () async throws -> BSONDocument? in
            let result = try await collection.updateOne(
                ["registration": .string(registration), "secret_hash": .string(currentHash)],
                ["$set": .document(set), "$unset": ["unregistered_at": ""]])
            guard result.matchedCount > 0 else { return nil }
            return try await collection.findOne(["registration": .string(registration)])
        }.flatMap(Device.init(document:))
    }

    /// The device that has `registration` now (its id, platform and state; never the secret's hash), if any.
    /// - Throws: `DAOError`.
    public func holder(of registration: String) async throws -> Device? {
        let fields: BSONDocument = ["registration": 1, "platform": 1, "state": 1]
        return try await mapErrors {
            try await collection.findOne(["registration": .string(registration)], projection: fields)
        }.flatMap(Device.init(document:))
    }

    /// The device with this id.
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func get(_ id: ObjectID) async throws -> Device {
        let document = try await mapErrors { try await collection.findOne(["_id": .objectID(id)]) }
        guard let document, let device = Device(document: document) else {
            throw DAOError(.deviceNotFound, "no device has the id \(id.hex)")
        }
        return device
    }

    /// The device whose secret has the hash `secretHash`, or nil (the `secret_hash` index).
    /// - Throws: `DAOError`.
    public func device(secretHash: String) async throws -> Device? {
        try await mapErrors { try await collection.findOne(["secret_hash": .string(secretHash)]) }
            .flatMap(Device.init(document:))
    }

    /// The devices of `ids` that exist, by id: one query per 64 ids (the devices of many requests at once).
    /// - Throws: `DAOError`.
    public func devices(ids: [ObjectID]) async throws -> [ObjectID: Device] {
        var found: [ObjectID: Device] = [:]
        for chunk in IDChunks.of(Array(Set(ids))) {
            let documents = try await mapErrors { try await collection.find(["_id": IDChunks.membership(chunk)]) }
            for case let device? in documents.map(Device.init(document:)) { found[device.id] = device }
        }
        return found
    }

    /// Changes a device's registration (FCM rotated its token), locale or app version; nil leaves a field.
    /// - Throws: `DAOError` `.deviceNotFound`, `.duplicate` when another device has the registration.
    public func update(_ id: ObjectID, registration: String?, locale: String?, appVersion: String?) async throws
        -> Device
    {
        var set: BSONDocument = ["updated_at": .int64(now())]
        if let registration { set["registration"] = .string(registration); set["state"] = "active" }
        if let locale { set["locale"] = .string(locale) }
        if let appVersion { set["app_version"] = .string(appVersion) }
        return try await changed(id, ["$set": .document(set)])
    }

    /// Binds a device to `person`, replacing the person it had (one atomic `$set`).
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func bind(_ id: ObjectID, person: String) async throws -> Device {
        try await changed(id, ["$set": ["person": .string(person), "updated_at": .int64(now())]])
    }

    /// The device after `update`: one update by `_id`, then a read by `_id` (never a `findAndModify`, whose cost
    /// on the embedded database grows with the collection).
    private func changed(_ id: ObjectID, _ update: BSONDocument) async throws -> Device {
        let matched = try await mapErrors {
            try await collection.updateOne(["_id": .objectID(id)], update).matchedCount
        }
        guard matched > 0 else { throw DAOError(.deviceNotFound, "no device has the id \(id.hex)") }
        return try await get(id)
    }

    /// Removes a device.
    /// - Throws: `DAOError` `.deviceNotFound`.
    public func delete(_ id: ObjectID) async throws {
        let deleted = try await mapErrors { try await collection.deleteOne(["_id": .objectID(id)]) }
        guard deleted > 0 else { throw DAOError(.deviceNotFound, "no device has the id \(id.hex)") }
    }

    /// Marks the device that has `registration` unregistered (FCM said the token is gone).
    /// - Throws: `DAOError`.
    public func markUnregistered(registration: String) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["registration": .string(registration), "state": "active"],
                ["$set": ["state": "unregistered", "unregistered_at": .int64(now())]])
        }
    }

    /// Marks the devices that have `registrations` unregistered (FCM said their tokens are gone), in slices of
    /// `IDChunks.perCommand`; a device given a new registration meanwhile is left as it is.
    /// - Throws: `DAOError`.
    public func markUnregistered(registrations: [String]) async throws {
        for chunk in IDChunks.of(registrations) {
            _ = try await mapErrors {
                try await collection.updateMany(
                    ["registration": ["$in": .array(chunk.map(BSONValue.string))], "state": "active"],
                    ["$set": ["state": "unregistered", "unregistered_at": .int64(now())]])
            }
        }
    }

    /// The active devices bound to one of `persons` (id, registration, platform, state, person; never the secret's
    /// hash), read on the `person` index `personsPerQuery` persons a query: whom a message to persons and groups
    /// reaches. An unbound or unregistered device is not among them.
    /// - Throws: `DAOError`.
    public func active(ofPersons persons: [String]) async throws -> [Device] {
        let fields = Self.audienceFields
        let chunks = stride(from: 0, to: persons.count, by: Self.personsPerQuery).map {
            persons[$0..<min($0 + Self.personsPerQuery, persons.count)].map(BSONValue.string)
        }
        // The state is checked here, not in the query: a person has few devices, and each condition of the query is
        // matched again on every document found (SecantusDB: 20 % of the lookup's time).
        let query = { @Sendable (chunk: [BSONValue]) async throws -> [Device] in
            try await mapErrors {
                try await collection.find(["person": ["$in": .array(chunk)]], options: FindOptions(projection: fields))
            }.compactMap(Device.init(document:)).filter { $0.state == .active }
        }
        // A few queries at a time: each waits on its round trip and the server's turn, not on the others.
        return try await withThrowingTaskGroup(of: [Device].self) { group in
            var devices: [Device] = []
            var next = 0
            while next < min(Self.queriesAtOnce, chunks.count) {
                let chunk = chunks[next]
                group.addTask { try await query(chunk) }
                next += 1
            }
            while let found = try await group.next() {
                devices += found
                if next < chunks.count {
                    let chunk = chunks[next]
                    group.addTask { try await query(chunk) }
                    next += 1
                }
            }
            return devices
        }
    }

    /// What the fan-out reads of a recipient's device: quiet hours too (passive and active messages are held back for a
    /// quiet device), and the locale (it picks the message's language).
    static let audienceFields: BSONDocument = [
        "registration": 1, "platform": 1, "state": 1, "person": 1, "quiet_hours": 1, "locale": 1,
    ]

    /// The active devices bound to one of `persons`, read as one range of the `person` index (from the least of them
    /// to the greatest, in the database's byte order) and the persons not asked for left out here; nil when that range
    /// holds more than `devicesPerRangedPerson` devices a person asked for (the persons are spread among many others:
    /// read them by `active(ofPersons:)`). A roster's persons are mostly neighbours: one range costs the embedded
    /// database less than half of the `$in` lists for the same devices (0.87 s against 2.1 s of its CPU for 20,000).
    /// - Throws: `DAOError`.
    public func active(inRangeOf persons: [String]) async throws -> [Device]? {
        let wanted = Set(persons)
        guard let range = KeyRange.bounds(of: wanted) else { return [] }
        let limit = wanted.count * Self.devicesPerRangedPerson + 16
        let found = try await mapErrors {
            try await collection.find(
                ["person": range], options: FindOptions(projection: Self.audienceFields, limit: Int64(limit + 1)))
        }
        guard found.count <= limit else { return nil }
        return found.compactMap(Device.init(document:)).filter {
            $0.state == .active && $0.person.map(wanted.contains) == true
        }
    }

    /// How many devices a range read by `active(inRangeOf:)` may hold for each person asked for before it gives up:
    /// a person has a phone or two, and a range with many more belongs mostly to others.
    static let devicesPerRangedPerson = 3

    /// How many queries of `active(ofPersons:)` are under way at once.
    static let queriesAtOnce = 4

    /// Persons a query of `active(ofPersons:)` names: SecantusDB matches each document found against the whole
    /// `$in` list, so a query's cost grows with the square of its size (32: 1.7 s for 20,000 devices; 64: 2.3 s;
    /// 1,024: 15 s).
    static let personsPerQuery = 32

    /// The ids of devices unregistered before `cutoff` (Unix ms), for their removal.
    public func unregistered(before cutoff: Int64, limit: Int64 = 500) async throws -> [ObjectID] {
        try await mapErrors {
            try await collection.find(
                ["state": "unregistered", "unregistered_at": ["$lt": .int64(cutoff)]],
                options: FindOptions(projection: ["_id": 1], limit: limit))
        }.compactMap { $0.objectID("_id") }
    }

    /// The active devices after `id` (nil: from the start), in id order: a page of the registry, for the
    /// fan-out of a new subject, the language rollout and the periodic repair. Only what those need is read (id,
    /// registration, platform, state, locale): never the secret's hash.
    public func activePage(after id: ObjectID?, limit: Int64) async throws -> [Device] {
        var filter: BSONDocument = ["state": "active"]
        if let id { filter["_id"] = ["$gt": .objectID(id)] }
        let fields: BSONDocument = ["registration": 1, "platform": 1, "state": 1, "locale": 1]
        return try await mapErrors {
            try await collection.find(filter, options: FindOptions(projection: fields, sort: ["_id": 1], limit: limit))
        }.compactMap(Device.init(document:))
    }

    /// The devices from `first` through `last` (by id) as they are now, whatever their state, by id: what a
    /// rollout checks once it has recorded a page (deleted, unregistered, given a new registration or locale
    /// meanwhile).
    public func range(from first: ObjectID, through last: ObjectID) async throws -> [ObjectID: Device] {
        let fields: BSONDocument = ["registration": 1, "platform": 1, "state": 1, "locale": 1]
        let found = try await mapErrors {
            try await collection.find(
                ["_id": ["$gte": .objectID(first), "$lte": .objectID(last)]],
                options: FindOptions(projection: fields))
        }.compactMap(Device.init(document:))
        return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// How many devices are active, per platform (for metrics).
    public func countByPlatform() async throws -> [Platform: Int] {
        var counts: [Platform: Int] = [:]
        for platform in Platform.allCases {
            counts[platform] = Int(
                try await mapErrors {
                    try await collection.countDocuments(["state": "active", "platform": .string(platform.rawValue)])
                })
        }
        return counts
    }
}

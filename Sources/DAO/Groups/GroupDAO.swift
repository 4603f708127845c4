import HubTime
import Mongo

/// A group as stored in `groups`: a named list of person ids (its members live in `group_members`) and the
/// usernames that may send to it.
public struct Group: Sendable, Equatable {
    /// The caller's id for the group (`[A-Za-z0-9._:-]`, checked by the service before any query).
    public var id: String
    public var name: String
    /// The usernames and token names that may send to the group.
    public var access: [String]
    /// How many members the group has, kept with each write of its members.
    public var memberCount: Int64
    /// When the group or its members last changed (Unix ms).
    public var updatedAt: Int64
    /// Who may post to the group: staff only (the default), or its members too (a room).
    public var posting: Posting
    /// Person ids who manage the group from their devices: they add and remove members and withdraw posts.
    public var managers: [String]
    /// Whether a member may leave the group from their device.
    public var selfLeave: Bool

    /// Who may post to a group (`posting`).
    public enum Posting: String, Sendable, CaseIterable {
        /// Admins and the users and tokens of its access list, as for any group.
        case staff
        /// Its members too, from their devices (`POST /group/:groupID/messages`): a room.
        case members
    }

    /// A group's room settings, as a write gives them: nil leaves the stored one as it is.
    public struct RoomSettings: Sendable, Equatable {
        public var posting: Posting?
        public var managers: [String]?
        public var selfLeave: Bool?

        public init(posting: Posting? = nil, managers: [String]? = nil, selfLeave: Bool? = nil) {
            (self.posting, self.managers, self.selfLeave) = (posting, managers, selfLeave)
        }

        /// The `$set` of the settings given.
        var fields: [(key: String, value: BSONValue)] {
            var fields: [(key: String, value: BSONValue)] = []
            if let posting { fields.append(("posting", .string(posting.rawValue))) }
            if let managers { fields.append(("managers", .array(managers.map(BSONValue.string)))) }
            if let selfLeave { fields.append(("self_leave", .bool(selfLeave))) }
            return fields
        }
    }

    /// Whether `person` manages the group.
    public func isManager(_ person: String) -> Bool { managers.contains(person) }

    init?(document: BSONDocument) {
        guard let id = document["_id"]?.stringValue, let name = document["name"]?.stringValue else { return nil }
        self.id = id
        self.name = name
        self.access = document["access"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.memberCount = document["member_count"]?.int64Value ?? 0
        self.updatedAt = document["updated_at"]?.int64Value ?? 0
        self.posting = document["posting"]?.stringValue.flatMap(Posting.init(rawValue:)) ?? .staff
        self.managers = document["managers"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.selfLeave = document["self_leave"]?.boolValue ?? false
    }
}

/// Groups in `groups` (one document a group, `_id` the group's id) and their members in `group_members` (one
/// document per group and person, unique on the pair). A roster is replaced without reading it: the given members
/// are upserted with a fresh `sync` stamp in bulk writes, the members without that stamp deleted, and the count set
/// from a count of what is left; adding or removing one member moves the count with `$inc`. The fan-out reads the
/// members a range at a time (`GroupDAO+MemberRanges.swift`). A member leaving, by any of these, loses what they read
/// of the group's messages (`PersonUnreadDAO.forget`).
public struct GroupDAO: Sendable {
    let groups: MongoCollection
    let members: MongoCollection
    let unread: PersonUnreadDAO
    let now: UnixClock

    /// How many members one bulk write upserts: a server that holds its lock for a whole command (SecantusDB)
    /// answers other requests between them.
    static let membersPerWrite = 2_000

    /// The indexes of `group_members`: one document per (group, person), a group's members in order (pages), and
    /// the groups of a person.
    static let indexes = [
        IndexModel(keys: ["group": 1, "person": 1], name: "group.person", unique: true),
        IndexModel(keys: ["person": 1], name: "person"),
    ]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.groups = database.collection(CollectionName.groups)
        self.members = database.collection(CollectionName.groupMembers)
        self.unread = PersonUnreadDAO(database: database)
        self.now = now
    }

    /// Creates or replaces group `id` with `name`, `access` and exactly `persons` (distinct) as members; returns the
    /// group and whether it was created.
    /// - Throws: `DAOError`.
    public func replace(
        id: String, name: String, access: [String], persons: [String], room: Group.RoomSettings = .init()
    ) async throws
        -> (group: Group, created: Bool)
    {
        let time = now()
        let stamp = BSONValue.objectID(ObjectID())
        let set = BSONDocument(
            [
                ("name", .string(name)), ("access", .array(access.map(BSONValue.string))),
                ("member_marks", .array(Self.rangeMarks(of: persons).map(BSONValue.string))),
                ("updated_at", .int64(time)),
            ] + room.fields)
        let upsert = try await mapErrors {
            try await groups.updateOne(
                ["_id": .string(id)],
                [
                    "$set": .document(set),
                    "$setOnInsert": ["member_count": .int64(0), "created_at": .int64(time)],
                ],
                options: UpdateOptions(upsert: true))
        }
        for start in stride(from: 0, to: persons.count, by: Self.membersPerWrite) {
            let chunk = persons[start..<min(start + Self.membersPerWrite, persons.count)]
            try await stampMembers(Array(chunk), of: id, stamp: stamp, groupIsNew: upsert.upsertedID != nil)
        }
        let group = try await mapErrors { () -> Group? in
            let leaving: BSONDocument = ["group": .string(id), "sync": ["$ne": stamp]]
            // Who leaves is read only where someone may have read the group's messages.
            if upsert.upsertedID == nil, try await unread.countsAnyone() {
                let left = try await members.find(leaving, options: FindOptions(projection: ["person": 1, "_id": 0]))
                try await unread.forget(left.compactMap { $0["person"]?.stringValue }, in: id)
            }
            try await members.deleteMany(leaving)
            let count = try await members.countDocuments(["group": .string(id)])
            try await groups.updateOne(["_id": .string(id)], ["$set": ["member_count": .int64(count)]])
            return try await groups.findOne(["_id": .string(id)]).flatMap(Group.init(document:))
        }
        guard let group else { throw DAOError(.database, "the group was deleted while its roster was written") }
        return (group, upsert.upsertedID != nil)
    }

    /// Marks `persons` members of group `id` with this roster's `stamp`. A group this roster created has no member
    /// yet: its members are inserted, which the embedded database does several times faster than upserts (an upsert
    /// is a query first); one stored meanwhile by another roster of the same group is stamped by an upsert.
    private func stampMembers(_ persons: [String], of id: String, stamp: BSONValue, groupIsNew: Bool) async throws {
        var upserted = persons
        if groupIsNew {
            let refused = try await mapErrors {
                try await members.insertManyIgnoringDuplicates(
                    persons.map { ["group": .string(id), "person": .string($0), "sync": stamp] })
            }
            upserted = refused.sorted().map { persons[$0] }
        }
        let statements = upserted.map { person in
            UpdateStatement(
                filter: ["group": .string(id), "person": .string(person)],
                update: ["$set": ["sync": stamp]], options: UpdateOptions(upsert: true))
        }
        _ = try await mapErrors { try await members.bulkUpdate(statements) }
    }

    /// The group `id`, or nil.
    /// - Throws: `DAOError`.
    public func group(id: String) async throws -> Group? {
        try await mapErrors { try await groups.findOne(["_id": .string(id)]).flatMap(Group.init(document:)) }
    }

    /// What a listing of groups reads of each: all but the fan-out's member ranges.
    static let listed: BSONDocument = ["member_marks": 0]

    /// Up to `limit` groups with ids after `after` (nil: from the first), by id: a page of `GET /group`.
    /// - Throws: `DAOError`.
    public func page(after: String?, limit: Int) async throws -> [Group] {
        let filter: BSONDocument = after.map { ["_id": ["$gt": .string($0)]] } ?? [:]
        return try await mapErrors {
            try await groups.find(
                filter,
                options: FindOptions(
                    projection: Self.listed, sort: ["_id": 1],
                    limit: Int64(max(limit, 1))))
        }.compactMap(Group.init(document:))
    }

    /// Every group, by id.
    /// - Throws: `DAOError`.
    public func all() async throws -> [Group] {
        try await mapErrors {
            try await groups.find([:], options: FindOptions(projection: Self.listed, sort: ["_id": 1]))
                .compactMap(Group.init(document:))
        }
    }

    /// Adds `person` to group `id`; returns the group (nil when there is none) and whether the person was added
    /// (false: a member already).
    /// - Throws: `DAOError`.
    public func add(_ person: String, to id: String) async throws -> (group: Group, added: Bool)? {
        guard try await group(id: id) != nil else { return nil }
        var added = false
        do {
            let result = try await mapErrors {
                try await members.updateOne(
                    ["group": .string(id), "person": .string(person)],
                    ["$setOnInsert": ["sync": .objectID(ObjectID())]],
                    options: UpdateOptions(upsert: true))
            }
            added = result.upsertedID != nil
        } catch let error as DAOError where error.code == .duplicate {
            // Two adds of the same person at once: the other one inserted it.
        }
        let change: Int64 = added ? 1 : 0
        // One update by `_id`, then a read by `_id`: never a `findAndModify`, whose cost on the embedded database
        // grows with the collection.
        let matched = try await mapErrors {
            try await groups.updateOne(
                ["_id": .string(id)],
                [
                    "$inc": ["member_count": .int64(change)],
                    "$set": ["updated_at": .int64(now())],
                ]
            ).matchedCount
        }
        guard matched > 0 else { return nil }
        return try await group(id: id).map { ($0, added) }
    }

    /// Removes `person` from group `id`; returns whether they were a member.
    /// - Throws: `DAOError`.
    public func remove(_ person: String, from id: String) async throws -> Bool {
        let deleted = try await mapErrors {
            try await members.deleteOne(["group": .string(id), "person": .string(person)])
        }
        guard deleted > 0 else { return false }
        try await unread.forget([person], in: id)
        _ = try await mapErrors {
            try await groups.updateOne(
                ["_id": .string(id)],
                [
                    "$inc": ["member_count": .int64(-1)],
                    "$set": ["updated_at": .int64(now())],
                ])
        }
        return true
    }

    /// Up to `limit` person ids of group `id` after `after`, in order.
    /// - Throws: `DAOError`.
    public func members(of id: String, after: String?, limit: Int) async throws -> [String] {
        var filter: BSONDocument = ["group": .string(id)]
        if let after { filter["person"] = ["$gt": .string(after)] }
        let documents = try await mapErrors {
            try await members.find(
                filter,
                options: FindOptions(
                    projection: ["person": 1, "_id": 0],
                    sort: ["person": 1], limit: Int64(limit)))
        }
        return documents.compactMap { $0["person"]?.stringValue }
    }

    /// Whether `person` is a member of group `id` (one read on the `group.person` index).
    /// - Throws: `DAOError`.
    public func isMember(_ person: String, of id: String) async throws -> Bool {
        try await mapErrors {
            try await members.findOne(
                ["group": .string(id), "person": .string(person)], projection: ["_id": 1])
        } != nil
    }

    /// The ids of the groups `person` is a member of (the `person` index), at most `limit`.
    /// - Throws: `DAOError`.
    public func groups(of person: String, limit: Int = 1_000) async throws -> [String] {
        let documents = try await mapErrors {
            try await members.find(
                ["person": .string(person)],
                options: FindOptions(projection: ["group": 1, "_id": 0], limit: Int64(limit)))
        }
        return documents.compactMap { $0["group"]?.stringValue }
    }

    /// Deletes group `id` and its members; returns whether it existed.
    /// - Throws: `DAOError`.
    public func delete(id: String) async throws -> Bool {
        try await mapErrors {
            let deleted = try await groups.deleteOne(["_id": .string(id)])
            try await members.deleteMany(["group": .string(id)])
            try await unread.forget(group: id)
            return deleted > 0
        }
    }
}

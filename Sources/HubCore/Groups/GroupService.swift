import DAO
import HubTime
import Mongo

/// Groups of persons (a class, a club, an event's invitees) and who may send to them: the one home of their rules
/// (what a group id, a person id, a name and an access list may be), which the API and the portal call. Every input
/// is checked before any query, so a refused request changes nothing.
public struct GroupService: Sendable {
    let groups: GroupDAO
    /// The devices bound to members, counted for a group's reach.
    let devices: DeviceDAO
    /// Where every change of a group is recorded.
    let audit: AuditLog
    /// Which of some persons were erased lately (`ERASURE_BLOCK_DAYS`): a roster does not add them back.
    let erased: @Sendable ([String]) async throws -> Set<String>

    /// The most members one roster holds (a sync sends them all in one call).
    public static let maximumMembers = 10_000
    /// The most managers a group names.
    public static let maximumManagers = 100
    /// The most usernames an access list holds.
    public static let maximumAccess = 1_000
    /// The longest group id, person id and group name, in characters.
    public static let maximumIDLength = 128
    public static let maximumPersonLength = 256
    public static let maximumNameLength = 200
    /// The most entries one page holds (of a group's person ids, of the groups).
    public static let maximumPage = 1_000

    /// The groups of `database`; `audit` is the hub's log (`HubServices.audit`; nil: one keyed as the database keeps).
    public init(
        database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds, audit: AuditLog? = nil,
        erased: @escaping @Sendable ([String]) async throws -> Set<String> = { _ in [] }
    ) {
        self.groups = GroupDAO(database: database, now: now)
        self.devices = DeviceDAO(database: database, now: now)
        self.audit = audit ?? AuditLog(database: database, now: now)
        self.erased = erased
    }

    // MARK: Rules

    /// Why `id` cannot be a group id, or nil: 1 to 128 of `A-Z a-z 0-9 . _ : -`, not starting with `.`.
    public static func groupIDProblem(_ id: String) -> String? {
        let allowed = id.unicodeScalars.allSatisfy {
            $0.isASCII
                && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                    || "._:-".unicodeScalars.contains($0))
        }
        guard (1...maximumIDLength).contains(id.count), allowed, !id.hasPrefix(".") else {
            return
                "a group id is 1 to \(maximumIDLength) of the characters A-Z a-z 0-9 . _ : - and does not start with ."
        }
        return nil
    }

    /// Why `id` cannot be a person id, or nil: 1 to 256 printable characters (no control characters).
    public static func personIDProblem(_ id: String) -> String? {
        let printable = id.unicodeScalars.allSatisfy {
            $0.properties.generalCategory != .control
                && $0.properties.generalCategory != .format
                && $0.properties.generalCategory != .unassigned
        }
        guard (1...maximumPersonLength).contains(id.count), printable else {
            return "a person id is 1 to \(maximumPersonLength) printable characters"
        }
        return nil
    }

    /// The group id checked.
    /// - Throws: `GroupRefusal.invalidID` naming `field`.
    static func checkedGroupID(_ id: String, field: String = "groupID") throws -> String {
        if let problem = groupIDProblem(id) { throw GroupRefusal(.invalidID, "\(field): \(problem)") }
        return id
    }

    /// The person id checked.
    /// - Throws: `GroupRefusal.invalidID` naming `field`.
    static func checkedPersonID(_ id: String, field: String = "personID") throws -> String {
        if let problem = personIDProblem(id) { throw GroupRefusal(.invalidID, "\(field): \(problem)") }
        return id
    }

    // MARK: Writes

    /// Creates or replaces group `id` with `name`, exactly `members` (duplicates collapsed) and `access`; returns the
    /// group and whether it was created. Sending the same roster again changes nothing but `updated_at`.
    /// - Throws: `GroupRefusal` (`.invalidID`, `.invalidField`, each naming the field) before any write; `DAOError`.
    public func replace(
        id: String, name: String, members: [String], access: [String], room: Group.RoomSettings = .init()
    ) async throws
        -> (group: Group, created: Bool)
    {
        let id = try Self.checkedGroupID(id)
        guard (1...Self.maximumNameLength).contains(name.count), !name.contains(where: \.isNewline) else {
            throw GroupRefusal(.invalidField, "name: 1 to \(Self.maximumNameLength) characters on one line")
        }
        guard members.count <= Self.maximumMembers else {
            throw GroupRefusal(.invalidField, "members: at most \(Self.maximumMembers) person ids")
        }
        var seen = Set<String>()
        var persons: [String] = []
        persons.reserveCapacity(members.count)
        for (index, person) in members.enumerated() {
            _ = try Self.checkedPersonID(person, field: "members[\(index)]")
            if seen.insert(person).inserted { persons.append(person) }
        }
        guard access.count <= Self.maximumAccess else {
            throw GroupRefusal(.invalidField, "access: at most \(Self.maximumAccess) usernames")
        }
        for (index, username) in access.enumerated() {
            if let problem = AccountService.nameProblem(username) {
                throw GroupRefusal(.invalidField, "access[\(index)]: \(problem)")
            }
        }
        var named = Set<String>()
        let access = access.filter { named.insert($0).inserted }
        var room = room
        if let managers = room.managers {
            guard managers.count <= Self.maximumManagers else {
                throw GroupRefusal(.invalidField, "managers: at most \(Self.maximumManagers) person ids")
            }
            for (index, person) in managers.enumerated() {
                _ = try Self.checkedPersonID(person, field: "managers[\(index)]")
            }
            var seenManagers = Set<String>()
            room.managers = managers.filter { seenManagers.insert($0).inserted }
        }
        // Persons erased within ERASURE_BLOCK_DAYS stay out, members and managers, however the school's roster still
        // lists them.
        let erasedPersons = try await erased(persons + (room.managers ?? []))
        if !erasedPersons.isEmpty {
            persons.removeAll(where: erasedPersons.contains)
            room.managers?.removeAll(where: erasedPersons.contains)
        }
        let before = try await groups.group(id: id)
        let result = try await groups.replace(id: id, name: name, access: access, persons: persons, room: room)
        await audit.record(
            action: "group.replace", target: AuditTarget(kind: "group", id: id),
            change: AuditChange.edit(before: Self.auditSummary(before), after: Self.auditSummary(result.group)))
        return result
    }

    /// Adds `person` to group `id`; returns the group and whether the person was added (false: a member already).
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`); `DAOError`.
    public func add(_ person: String, to id: String) async throws -> (group: Group, added: Bool) {
        let id = try Self.checkedGroupID(id)
        let person = try Self.checkedPersonID(person)
        guard try await erased([person]).isEmpty else {
            throw GroupRefusal(.erasedPerson, "this person's data was erased lately (ERASURE_BLOCK_DAYS)")
        }
        guard let result = try await groups.add(person, to: id) else { throw Self.notFound(id) }
        if result.added {
            await audit.record(
                action: "group.member.add", target: AuditTarget(kind: "group", id: id),
                change: ["person": .string(person)])
        }
        return result
    }

    /// Removes `person` from group `id`.
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`, `.memberNotFound`); `DAOError`.
    public func remove(_ person: String, from id: String) async throws {
        let id = try Self.checkedGroupID(id)
        let person = try Self.checkedPersonID(person)
        guard try await groups.remove(person, from: id) else {
            guard try await groups.group(id: id) != nil else { throw Self.notFound(id) }
            throw GroupRefusal(.memberNotFound, "the person is not a member of the group")
        }
        await audit.record(
            action: "group.member.remove", target: AuditTarget(kind: "group", id: id),
            change: ["person": .string(person)])
    }

    /// Deletes group `id` and its members.
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`); `DAOError`.
    public func delete(id: String) async throws {
        let id = try Self.checkedGroupID(id)
        let before = try await groups.group(id: id)
        guard try await groups.delete(id: id) else { throw Self.notFound(id) }
        await audit.record(
            action: "group.delete", target: AuditTarget(kind: "group", id: id),
            change: AuditChange.deleted(Self.auditSummary(before)))
    }

    // MARK: Reads

    /// Every group, by id.
    /// - Throws: `DAOError`.
    public func all() async throws -> [Group] {
        try await groups.all()
    }

    /// Up to `limit` (1 to `maximumPage`) groups with ids after `after`, by id, and the last one's id when there may
    /// be more (the next page's `after`).
    /// - Throws: `GroupRefusal` (`.invalidField`, `.invalidID`); `DAOError`.
    public func page(after: String?, limit: Int) async throws -> (groups: [Group], next: String?) {
        try Self.checkPageLimit(limit)
        if let after { _ = try Self.checkedGroupID(after, field: "cursor") }
        let page = try await groups.page(after: after, limit: limit)
        return (page, page.count == limit ? page.last?.id : nil)
    }

    /// Group `id`.
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`); `DAOError`.
    public func group(id: String) async throws -> Group {
        let id = try Self.checkedGroupID(id)
        guard let group = try await groups.group(id: id) else { throw Self.notFound(id) }
        return group
    }

    /// Up to `limit` (1 to `maximumPage`) person ids of group `id` after `after`, sorted, and the last one when
    /// more may follow (the next page's `after`).
    /// - Throws: `GroupRefusal` (`.invalidID`, `.invalidField`, `.groupNotFound`); `DAOError`.
    public func members(of id: String, after: String?, limit: Int) async throws -> (persons: [String], next: String?) {
        let id = try Self.checkedGroupID(id)
        try Self.checkPageLimit(limit)
        if let after { _ = try Self.checkedPersonID(after, field: "cursor") }
        guard try await groups.group(id: id) != nil else { throw Self.notFound(id) }
        let persons = try await groups.members(of: id, after: after, limit: limit)
        return (persons, persons.count == limit ? persons.last : nil)
    }

    /// A page's `limit`: 1 to `maximumPage`.
    /// - Throws: `GroupRefusal` (`.invalidField`).
    private static func checkPageLimit(_ limit: Int) throws {
        guard (1...maximumPage).contains(limit) else {
            throw GroupRefusal(.invalidField, "limit: an integer from 1 to \(maximumPage)")
        }
    }

    private static func notFound(_ id: String) -> GroupRefusal {
        GroupRefusal(.groupNotFound, "no group has the id \(id)")
    }

    // MARK: Reach

    /// How many active devices are bound to the members of `group` now: what a message to it reaches. Reads its
    /// members a page at a time and counts on the devices' `person` index.
    /// - Throws: `DAOError`.
    public func deviceCount(of group: Group) async throws -> Int {
        var count = 0
        var after: String?
        repeat {
            let persons = try await groups.members(of: group.id, after: after, limit: Self.maximumPage)
            count += try await devices.activeCount(ofPersons: persons)
            after = persons.count == Self.maximumPage ? persons.last : nil
        } while after != nil
        return count
    }
}

extension GroupService {
    /// A group as its audit entries show it: name, access list and the number of members (never the roster).
    static func auditSummary(_ group: Group?) -> BSONDocument {
        guard let group else { return BSONDocument() }
        return [
            "name": .string(group.name), "access": .array(group.access.map(BSONValue.string)),
            "members": .int64(group.memberCount), "posting": .string(group.posting.rawValue),
            "managers": .array(group.managers.map(BSONValue.string)), "self_leave": .bool(group.selfLeave),
        ]
    }
}

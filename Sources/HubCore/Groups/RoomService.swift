import DAO
import HubTime
import Mongo

/// Rooms: groups whose members post from their devices (`posting: members`), read the room's history, leave it
/// (`self_leave`), and whose managers (`managers`) add and remove members and withdraw posts. The one home of who
/// may do what in a room; every request names the device by its secret, and the device's person is the caller.
public struct RoomService: Sendable {
    let groups: GroupService
    let groupDAO: GroupDAO
    let messages: MessageService
    let rates: RateWindowDAO
    let mutes: PersonMuteDAO
    let unread: PersonUnreadDAO
    /// How many posts a person may make a minute, all rooms and replicas together (`ROOM_POSTS_PER_MINUTE`).
    let postsPerMinute: Int
    let now: UnixClock

    /// The most messages a page of a room's history holds.
    public static let maximumPage = 100

    public init(
        database: MongoDatabase, groups: GroupService, messages: MessageService, postsPerMinute: Int = 30,
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.groups = groups
        self.groupDAO = GroupDAO(database: database, now: now)
        self.messages = messages
        self.rates = RateWindowDAO(database: database, now: now)
        self.mutes = PersonMuteDAO(database: database)
        self.unread = PersonUnreadDAO(database: database)
        self.postsPerMinute = postsPerMinute
        self.now = now
    }

    /// Posts `text` (titled `title`, with `data`) from `device` to room `groupID`: the device's person must be a
    /// member of a group that lets members post, within `postsPerMinute`.
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`); `RoomRefusal` (`.notAMember`,
    ///   `.postingNotAllowed`, `.tooManyPosts`); `SendRefusal` (the send rules); `DAOError`.
    public func post(
        title: String?, message text: String, data: [String: String], to groupID: String, from device: Device
    )
        async throws -> Message
    {
        let (room, person) = try await memberOf(groupID, device: device)
        guard room.posting == .members else {
            throw RoomRefusal(.postingNotAllowed, "the group \(room.id) lets staff alone post")
        }
        // The send rules first: a refused post takes nothing of the person's minute.
        let submission = try messages.roomPost(title: title, message: text, data: data, in: room, by: person)
        let taken = try await rates.take(1, of: "room-post:\(person)", limit: postsPerMinute, windowMS: 60_000)
        guard taken.granted > 0 else {
            let seconds = Int((max(0, taken.nextWindowAt - now()) + 999) / 1000)
            throw RoomRefusal(
                .tooManyPosts, "at most \(postsPerMinute) posts a minute; try again in \(seconds) s",
                retryAfterSeconds: max(1, seconds))
        }
        return try await messages.post(submission, in: room, by: person)
    }

    /// A page of room `groupID`'s history for `device`, whose person must be a member.
    /// - Throws: `GroupRefusal`; `RoomRefusal.notAMember`; `DAOError`.
    public func history(of groupID: String, for device: Device, after: MessageCursor?, limit: Int) async throws
        -> MessagePage
    {
        let (room, _) = try await memberOf(groupID, device: device)
        return try await messages.roomPage(room.id, after: after, limit: limit)
    }

    /// A page of group `groupID`'s history for an admin.
    /// - Throws: `GroupRefusal`; `DAOError`.
    public func history(of groupID: String, after: MessageCursor?, limit: Int) async throws -> MessagePage {
        let room = try await groups.group(id: groupID)
        return try await messages.roomPage(room.id, after: after, limit: limit)
    }

    /// Adds `person` to group `groupID` at the request of `device`, whose person manages the group.
    /// - Throws: `GroupRefusal`; `RoomRefusal.notAManager`; `DAOError`.
    public func add(_ person: String, to groupID: String, by device: Device) async throws -> (group: Group, added: Bool)
    {
        _ = try await managed(groupID, by: device)
        return try await AuditActor.$current.withValue(Self.actor(device)) { try await groups.add(person, to: groupID) }
    }

    /// Removes `person` from group `groupID` at the request of `device`: its person manages the group, or is
    /// `person` leaving a group that lets members leave (`self_leave`).
    /// - Throws: `GroupRefusal` (`.memberNotFound` too); `RoomRefusal` (`.notAManager`, `.leaveNotAllowed`);
    ///   `DAOError`.
    public func remove(_ person: String, from groupID: String, by device: Device) async throws {
        let room = try await groups.group(id: groupID)
        guard let caller = device.person else {
            throw RoomRefusal(.notAManager, "the device is bound to no person")
        }
        if caller == person, !room.isManager(caller) {
            guard room.selfLeave else {
                throw RoomRefusal(.leaveNotAllowed, "the group \(room.id) does not let members leave by themselves")
            }
        } else if !room.isManager(caller) {
            throw RoomRefusal(.notAManager, "only the group's managers may remove its members")
        }
        try await AuditActor.$current.withValue(Self.actor(device)) { try await groups.remove(person, from: groupID) }
    }

    /// The audit log's actor of a device's request.
    private static func actor(_ device: Device) -> AuditActor { AuditActor(kind: .device, name: device.id.hex) }

    /// Withdraws post `msiKey` of room `groupID` at the request of `device`: its person wrote it or manages the room.
    /// - Throws: `GroupRefusal`; `RoomRefusal.notAMember`; `DAOError.messageNotFound`; `EditRefusal`.
    public func withdraw(post msiKey: ObjectID, in groupID: String, by device: Device, reason: String?) async throws
        -> Message
    {
        let room = try await groups.group(id: groupID)
        guard let person = device.person else {
            throw RoomRefusal(.notAMember, "the device is bound to no person")
        }
        return try await messages.withdraw(post: msiKey, in: room, by: person, device: device.id, reason: reason)
    }

    /// The furthest a mute may reach: a year from now (a longer one is a mute for good: `until` null).
    public static let maximumMuteMS: Int64 = 366 * 86_400_000

    /// Mutes group `groupID` for the person of `device` until `until` (Unix ms, in the future, at most
    /// `maximumMuteMS` ahead; nil: until unmuted): every device of the person, now and later, gets the group's
    /// messages in the background (time-sensitive and critical ones excepted).
    /// - Throws: `GroupRefusal` (`.invalidID`, `.groupNotFound`, `.invalidField` for `until`); `RoomRefusal.notAMember`
    ///   for a device bound to nobody; `DAOError`.
    public func mute(_ groupID: String, until: Int64?, by device: Device) async throws -> PersonMute {
        let person = try Self.person(of: device)
        let group = try await groups.group(id: groupID)
        if let until {
            let now = now()
            guard until > now, until - now <= Self.maximumMuteMS else {
                throw GroupRefusal(
                    .invalidField, "until: a Unix time in ms in the future, at most a year ahead, or null")
            }
        }
        try await mutes.mute(group.id, for: person, until: until)
        return PersonMute(group: group.id, until: until)
    }

    /// Unmutes group `groupID` for the person of `device`; returns whether it was muted.
    /// - Throws: `GroupRefusal.invalidID`; `RoomRefusal.notAMember` for a device bound to nobody; `DAOError`.
    public func unmute(_ groupID: String, by device: Device) async throws -> Bool {
        let person = try Self.person(of: device)
        return try await mutes.unmute(try GroupService.checkedGroupID(groupID), for: person)
    }

    /// The mutes of the person of `device` that hold now.
    /// - Throws: `RoomRefusal.notAMember` for a device bound to nobody; `DAOError`.
    public func mutes(of device: Device) async throws -> [PersonMute] {
        try await mutes.mutes(of: try Self.person(of: device), at: now())
    }

    /// The unread messages of the person of `device` (none for a device bound to nobody): in all, and per room and
    /// group.
    /// - Throws: `DAOError`.
    public func unread(of device: Device) async throws -> UnreadCounts {
        guard let person = device.person else { return UnreadCounts() }
        return try await unread.counts(of: person)
    }

    /// The person `device` is bound to.
    /// - Throws: `RoomRefusal.notAMember` when it is bound to nobody.
    private static func person(of device: Device) throws -> String {
        guard let person = device.person else {
            throw RoomRefusal(
                .notAMember, "the device is bound to no person: bind it first (PUT /device/:deviceID/person)")
        }
        return person
    }

    /// Group `groupID` and the device's person, who must be a member of it.
    /// - Throws: `GroupRefusal`; `RoomRefusal.notAMember`; `DAOError`.
    private func memberOf(_ groupID: String, device: Device) async throws -> (Group, String) {
        let room = try await groups.group(id: groupID)
        guard let person = device.person, try await groupDAO.isMember(person, of: room.id) else {
            throw RoomRefusal(.notAMember, "the device's person is not a member of the group \(room.id)")
        }
        return (room, person)
    }

    /// Group `groupID`, whose managers include the device's person.
    /// - Throws: `GroupRefusal`; `RoomRefusal.notAManager`; `DAOError`.
    private func managed(_ groupID: String, by device: Device) async throws -> Group {
        let room = try await groups.group(id: groupID)
        guard let person = device.person, room.isManager(person) else {
            throw RoomRefusal(.notAManager, "only the group's managers may change its members")
        }
        return room
    }
}

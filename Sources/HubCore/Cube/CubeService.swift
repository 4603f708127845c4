import DAO
import Logging
import Mongo

/// The information cube's one home: every add, update and delete of a channel, area or subject (the REST
/// routes, the portal and the command line all call these), each followed by the refresh of this process's
/// copy in memory so that its next read sees the write, and by what it means for devices' subscriptions
/// (`DeviceService`); and the reads, from that copy.
public struct CubeService: Sendable {
    /// The copy in memory (GET /channel, topic lookups, the portal's selects).
    public let cache: CubeCache
    let channels: ChannelDAO
    let areas: AreaDAO
    let subjects: SubjectDAO
    /// Names put on and taken off access lists (the OpenID provider's access map).
    let access: CubeAccessDAO
    let devices: DeviceService
    let logger: Logger
    /// Where every write is recorded.
    let audit: AuditLog

    init(database: MongoDatabase, cache: CubeCache, devices: DeviceService, audit: AuditLog, logger: Logger) {
        self.channels = ChannelDAO(database: database)
        self.areas = AreaDAO(database: database)
        self.subjects = SubjectDAO(database: database)
        self.access = CubeAccessDAO(database: database)
        self.cache = cache
        self.devices = devices
        self.logger = logger
        self.audit = audit
    }

    // MARK: Reads

    /// One channel as stored, from the database (the portal's pages and a channel not yet in memory).
    /// - Throws: `DAOError` (`.channelNotFound`, `.unavailable`).
    public func channel(_ id: ObjectID) async throws -> Channel {
        try await channels.get(id)
    }

    /// Every channel, from the database.
    public func allChannels() async throws -> [Channel] {
        try await channels.getAll()
    }

    /// The subject a topic key names (memory first).
    /// - Throws: `DAOError` (`.topicNotFound`, `.unavailable`).
    public func location(topicKey: String) async throws -> SubjectLocation {
        try await cache.location(topicKey: topicKey)
    }

    // MARK: Writes

    /// Adds a channel.
    public func addChannel(_ draft: ChannelDraft) async throws -> Channel {
        let channel = try await refreshing { try await channels.add(draft) }
        await audit.recordCube("channel", "create", id: channel.id.hex, before: nil, after: AuditLog.summary(channel))
        return channel
    }

    /// Replaces a channel's name, description and access list.
    public func updateChannel(_ id: ObjectID, _ draft: ChannelDraft) async throws -> Channel {
        let before = cache.latest()?.channels.first { $0.id == id }
        let channel = try await refreshing { try await channels.update(id, draft) }
        await audit.recordCube(
            "channel", "update", id: id.hex, before: AuditLog.summary(before),
            after: AuditLog.summary(channel))
        return channel
    }

    /// Deletes a channel with its areas and subjects.
    public func deleteChannel(_ id: ObjectID) async throws {
        let before = cache.latest()?.channels.first { $0.id == id }
        try await refreshing { try await channels.delete(id) }
        await audit.recordCube("channel", "delete", id: id.hex, before: AuditLog.summary(before), after: nil)
        await following { try await devices.topicsRemoved(prefix: id.hex + "-", exact: false) }
    }

    /// Adds an area to a channel.
    public func addArea(channelID: ObjectID, _ draft: AreaDraft) async throws -> Area {
        let area = try await refreshing { try await areas.add(channelID: channelID, draft) }
        await audit.recordCube("area", "create", id: area.id.hex, before: nil, after: AuditLog.summary(area))
        return area
    }

    /// Replaces an area's name, description and access list.
    public func updateArea(channelID: ObjectID, areaID: ObjectID, _ draft: AreaDraft) async throws -> Area {
        let before = cache.latest()?.channels.first { $0.id == channelID }?.area(areaID)
        let area = try await refreshing { try await areas.update(channelID: channelID, areaID: areaID, draft) }
        await audit.recordCube(
            "area", "update", id: areaID.hex, before: AuditLog.summary(before),
            after: AuditLog.summary(area))
        return area
    }

    /// Deletes an area with its subjects.
    public func deleteArea(channelID: ObjectID, areaID: ObjectID) async throws {
        let before = cache.latest()?.channels.first { $0.id == channelID }?.area(areaID)
        try await refreshing { try await areas.delete(channelID: channelID, areaID: areaID) }
        await audit.recordCube("area", "delete", id: areaID.hex, before: AuditLog.summary(before), after: nil)
        await following { try await devices.topicsRemoved(prefix: "\(channelID.hex)-\(areaID.hex)-", exact: false) }
    }

    /// Adds a subject (and so an FCM topic) to an area.
    public func addSubject(channelID: ObjectID, areaID: ObjectID, _ draft: SubjectDraft) async throws -> Subject {
        let subject = try await refreshing { try await subjects.add(channelID: channelID, areaID: areaID, draft) }
        await audit.recordCube("subject", "create", id: subject.topicKey, before: nil, after: AuditLog.summary(subject))
        await following { try await devices.subjectAdded(subject) }
        return subject
    }

    /// Replaces a subject's fields (its id and topic key stay).
    public func updateSubject(
        channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID,
        _ draft: SubjectDraft
    ) async throws -> Subject {
        let topicKey = Subject.topicKey(channelID: channelID, areaID: areaID, subjectID: subjectID)
        let before = cache.latest()?.topics[topicKey]?.subject
        let subject = try await refreshing {
            try await subjects.update(channelID: channelID, areaID: areaID, subjectID: subjectID, draft)
        }
        await audit.recordCube(
            "subject", "update", id: topicKey, before: AuditLog.summary(before),
            after: AuditLog.summary(subject))
        await following { try await devices.subjectChanged(from: before, to: subject) }
        return subject
    }

    /// Deletes a subject.
    public func deleteSubject(channelID: ObjectID, areaID: ObjectID, subjectID: ObjectID) async throws {
        let topicKey = Subject.topicKey(channelID: channelID, areaID: areaID, subjectID: subjectID)
        let before = cache.latest()?.topics[topicKey]?.subject
        try await refreshing { try await subjects.delete(channelID: channelID, areaID: areaID, subjectID: subjectID) }
        await audit.recordCube("subject", "delete", id: topicKey, before: AuditLog.summary(before), after: nil)
        await following { try await devices.topicsRemoved(prefix: topicKey, exact: true) }
    }

    /// Puts `name` on the access lists of the `granted` nodes among `managed` and takes it off the others (the
    /// OpenID provider's access map at a sign-in), one `$addToSet` or `$pull` a node that changes; records the
    /// change as `user.access` with the nodes before and after. A node missing from the cube is skipped and logged.
    /// - Throws: `DAOError`.
    public func setAccess(of name: String, granted: Set<CubeNode>, managed: Set<CubeNode>) async throws {
        guard !managed.isEmpty else { return }
        let channels = try await self.channels.getAll()
        func lists(_ node: CubeNode) -> [String]? {
            guard let channel = channels.first(where: { $0.id == node.channelID }) else { return nil }
            guard let areaID = node.areaID else { return channel.access }
            return channel.area(areaID)?.access
        }
        var before: [String] = [], after: [String] = []
        var changes: [(CubeNode, Bool)] = []
        for node in managed.sorted(by: { $0.description < $1.description }) {
            guard let access = lists(node) else {
                logger.warning("OIDC_ACCESS_MAP names a channel or area the cube lacks", metadata: ["node": "\(node)"])
                continue
            }
            let has = access.contains(name), wants = granted.contains(node)
            if has { before.append(node.description) }
            if wants { after.append(node.description) }
            if has != wants { changes.append((node, wants)) }
        }
        guard !changes.isEmpty else { return }
        try await refreshing {
            for (node, wants) in changes { try await access.set(name, granted: wants, on: node) }
        }
        await audit.record(
            action: "user.access", target: AuditTarget(kind: "user", id: name),
            change: AuditChange.edit(
                before: ["access": .array(before.map(BSONValue.string))],
                after: ["access": .array(after.map(BSONValue.string))]))
    }

    /// Carries a cube write over to devices' subscriptions. The write is done whatever happens here; a failure is
    /// logged and the reconciler's periodic pass brings the wishes back in line with the cube.
    private func following(_ work: () async throws -> Void) async {
        do { try await work() } catch {
            logger.warning("updating device subscriptions after a cube write failed", metadata: ["error": "\(error)"])
        }
    }

    /// Runs a write, then reloads the copy in memory so this process's next read sees it. A failed reload
    /// leaves the write done; the follower catches up.
    private func refreshing<T>(_ write: () async throws -> T) async throws -> T {
        let result = try await write()
        do { try await cache.refresh() } catch {
            logger.warning("reloading the cube after a write failed", metadata: ["error": "\(error)"])
        }
        return result
    }
}

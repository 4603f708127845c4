import DAO
import Mongo

/// How far a message reached, as its sender and admins see it (`GET /message/:msiKey/receipts`): its audience, what
/// FCM accepted, the receipts counted by event, platform and response, and a page of the devices that have not
/// answered.
public struct ReceiptReport: Sendable {
    /// One platform's share.
    public struct PlatformReach: Sendable, Equatable {
        public var audience: Int64
        public var received: Int64, opened: Int64, acknowledged: Int64
    }

    /// A device that has not acknowledged the message.
    public struct Silent: Sendable, Equatable {
        public var device: ObjectID
        /// Its person, for a message to persons and groups.
        public var person: String?
        public var platform: Platform
    }

    /// A name in the cube, with its id (hex); the name is nil when the cube no longer has it.
    public struct Named: Sendable, Equatable {
        public var id: String
        public var name: String?
    }

    public var msiKey: ObjectID
    /// "topic" or "persons" (a message to persons and groups).
    public var audienceKind: String
    /// The devices the message is for: its deliveries (persons and groups) or the devices that want its topic.
    public var audience: Int64
    /// The relay's state as the public sees it (`pending`, `sent`, `failed`, `expired`).
    public var relayState: String
    /// Devices FCM took the message for: sent deliveries, or for a topic message its whole audience once sent.
    public var fcmAccepted: Int64
    public var counts: ReceiptCounts
    /// The audience less those who acknowledged.
    public var notAnswered: Int64
    /// Devices FCM called gone: unregistered deliveries, or for a topic the devices whose registration FCM dropped.
    public var unreachable: Int64
    /// Devices held by their persons' choices (a subject or group in `digest` or `off`, a mute): they got the data
    /// alone, in the background, so they are counted apart from those that have not answered (`held` in the JSON).
    public var held: Int64 = 0
    public var platforms: [Platform: PlatformReach]
    /// A topic message's channel and area.
    public var channel: Named?, area: Named?
    /// A page of devices that have not acknowledged, in device order (each device for itself: `persons` says who
    /// answered on any of their devices).
    public var silent: [Silent]
    /// For a message to persons and groups, acknowledged by a person on any of their devices: the persons it
    /// reached and those who acknowledged; nil for a topic message (acknowledged per device).
    public var persons: PersonReach?

    /// The persons a message to persons and groups reached, and who of them acknowledged.
    public struct PersonReach: Sendable, Equatable {
        /// Distinct persons among its deliveries.
        public var audience: Int64
        /// Persons who acknowledged it on any of their devices.
        public var acknowledged: Int64
        /// For a message whose answers may change (`changeable`): the persons' current answers, counted by response
        /// (a changed answer as it now is); nil for any other.
        public var responses: [String: Int64]? = nil
    }
    /// The cursor of the next page (a device id), or nil at the end.
    public var next: String?
}

extension ReceiptService {
    /// The most devices a page of those not answered holds.
    public static let maximumLimit = 500
    /// The devices a page holds when the caller names no limit.
    public static let defaultLimit = 100
    /// The most audience rows one report request reads looking for those not answered (a message almost everyone
    /// answered would otherwise be read whole): past it, the page ends early with a cursor.
    static let scanLimit = 5_000

    /// The reach report of the message `msiKey` for `viewer` (its sender, admins), with up to `limit` devices not
    /// answered after the device `cursor`. The counts are one document (`receipt_counts`); the audience is counted
    /// once the relay is done with the message and stored on it (`reachAudience`); no receipt is read but those of
    /// the page's devices, by `_id`.
    /// - Throws: `DAOError` `.messageNotFound` when there is no such message or `viewer` may not see its detail.
    public func report(msiKey: ObjectID, for viewer: MessageViewer, cursor: ObjectID?, limit: Int) async throws
        -> ReceiptReport
    {
        let stored = try await messages.get(msiKey: msiKey)
        guard MessageVisibility.seesDetail(of: stored, viewer) else {
            throw DAOError(.messageNotFound, "no message has the msi_key \(msiKey.hex)")
        }
        let message = try await relayProgress.resolved([stored]).first ?? stored
        let status = RelayState(message: message.document)?.status
        let relayState = status.map(MessageVisibility.publicState) ?? "sent"
        let counts = try await receipts.counts(of: message.id)
        let limit = min(max(limit, 1), Self.maximumLimit)
        let audience = try await reachAudience(of: message, status: status)
        var report = ReceiptReport(
            msiKey: msiKey, audienceKind: message.audience == .persons ? "persons" : "topic",
            audience: audience.devices, relayState: relayState,
            fcmAccepted: audience.fcmAccepted, counts: counts, notAnswered: 0,
            unreachable: audience.unreachable, platforms: [:], silent: [], persons: nil,
            next: nil)
        let size = Self.readSize(
            limit: limit, audience: audience.devices, acknowledged: counts.byEvent[.acknowledged] ?? 0)
        switch audience.source {
        case .deliveries:
            (report.silent, report.next) = try await silentDeliveries(
                of: message.id, audience: audience, size: size,
                after: cursor, limit: limit)
        case .subscriptions:
            (report.silent, report.next) = try await silentSubscribers(
                of: message, audience: audience, size: size,
                after: cursor, limit: limit)
        }
        if message.audience != .persons, let place = Self.place(of: message.topicKey) {
            let location = try? await cube.location(topicKey: message.topicKey)
            report.channel = ReceiptReport.Named(id: place.channel, name: location?.channel.name)
            report.area = ReceiptReport.Named(id: place.area, name: location?.area.name)
        }
        report.held = audience.held
        report.notAnswered = max(0, report.audience - (counts.byEvent[.acknowledged] ?? 0))
        if message.audience == .persons {
            report.persons = ReceiptReport.PersonReach(
                audience: try await deliveries.personCount(of: message.id),
                acknowledged: try await personAcknowledgements.count(message: message.id),
                responses: Self.answersChange(message)
                    ? try await personAcknowledgements.responses(message: message.id) : nil)
        }
        for platform in Set(audience.platforms.keys).union(counts.byPlatform.keys) {
            let events = counts.byPlatform[platform] ?? [:]
            report.platforms[platform] = ReceiptReport.PlatformReach(
                audience: audience.platforms[platform] ?? 0, received: events[.received] ?? 0,
                opened: events[.opened] ?? 0, acknowledged: events[.acknowledged] ?? 0)
        }
        return report
    }

    /// `message`'s audience: the one stored on it; else counted, from its deliveries (a message to persons and
    /// groups, or a topic message whose audience the relay fixed at send, `audience_size`) or from the wishes for
    /// its topic, its size the relay's figure when it wrote one, and stored once the relay is done with the
    /// message (sent, failed, expired, imported; every delivery answered), so that later reports count nothing.
    func reachAudience(of message: Message, status: RelayStatus?) async throws -> ReachAudience {
        if let stored = ReachAudience(message: message.document) { return stored }
        let fixedSize = ReachAudience.fixedSize(of: message.document)
        var audience: ReachAudience
        var settled: Bool
        switch status {
        // A message held for approval may still be sent: its audience is counted when it is.
        case .pending?, .direct?, .awaitingApproval?: settled = false
        default: settled = true
        }
        if message.audience == .persons || message.document["audience_size"] != nil {
            let delivered = try await deliveries.counts(of: message.id)
            var platforms: [Platform: Int64] = [:]
            for (platform, states) in delivered.byPlatform { platforms[platform] = states.values.reduce(0, +) }
            audience = ReachAudience(
                source: .deliveries, devices: max(fixedSize ?? 0, delivered.total),
                fcmAccepted: delivered.byState[.sent] ?? 0,
                unreachable: delivered.byState[.unregistered] ?? 0, platforms: platforms)
            audience.held = delivered.held
            settled = settled && (delivered.byState[.pending] ?? 0) == 0
        } else {
            let wishes = try await subscriptions.audience(of: message.topicKey)
            var platforms: [Platform: Int64] = [:]
            for (platform, counts) in wishes { platforms[platform] = Int64(counts.devices) }
            let devices = platforms.values.reduce(0, +)
            let unreachable = Int64(wishes.values.reduce(0) { $0 + $1.dormant })
            let sent = status == .sent || status == .imported
            audience = ReachAudience(
                source: .subscriptions, devices: devices,
                fcmAccepted: sent ? devices - unreachable : 0, unreachable: unreachable,
                platforms: platforms)
            // The devices whose persons hold the subject (its held topic), when the message yields to preferences.
            if !message.breaksThroughPreferences, message.distribution == Distribution.alert.rawValue {
                audience.held = Int64(
                    try await subscriptions.audience(of: ServerOwnedTopic.held(message.topicKey)).values
                        .reduce(0) { $0 + $1.devices - $1.dormant })
            }
        }
        if settled {
            audience.marks = ReachAudience.marks(
                of: audience.source == .deliveries
                    ? try await deliveries.audienceDevices(of: message.id)
                    : try await subscriptions.audienceDevices(of: message.topicKey))
            try await reachAudiences.store(audience, on: message.id)
        }
        return audience
    }

    /// A page of the message's deliveries whose device has not acknowledged: read between the stored audience's
    /// marks, or (while it is not stored) a page after the cursor.
    private func silentDeliveries(
        of message: ObjectID, audience: ReachAudience, size: Int, after cursor: ObjectID?,
        limit: Int
    ) async throws -> ([ReceiptReport.Silent], String?) {
        try await silentPage(
            limit: limit, cursor: cursor, size: size,
            read: { after, size in
                let through = audience.mark(after: after, spans: size / ReachAudience.pageSpan)
                let rows =
                    audience.marks.isEmpty
                    ? try await deliveries.page(
                        of: message, after: after.map { Delivery.id(message: message, device: $0) },
                        limit: size)
                    : try await deliveries.range(of: message, after: after, through: through)
                return (
                    rows.map { ReceiptReport.Silent(device: $0.device, person: $0.person, platform: $0.platform) },
                    Self.next(
                        after: rows.last?.device, marked: !audience.marks.isEmpty, through: through,
                        full: rows.count == size)
                )
            }, acknowledged: { try await receipts.acknowledged(message: message, devices: $0.map(\.device)) })
    }

    /// A page of the devices that want the message's topic and have not acknowledged: read between the stored
    /// audience's marks, or (while it is not stored) a page after the cursor.
    private func silentSubscribers(
        of message: Message, audience: ReachAudience, size: Int, after cursor: ObjectID?,
        limit: Int
    ) async throws -> ([ReceiptReport.Silent], String?) {
        try await silentPage(
            limit: limit, cursor: cursor, size: size,
            read: { after, size in
                let through = audience.mark(after: after, spans: size / ReachAudience.pageSpan)
                let rows =
                    audience.marks.isEmpty
                    ? try await subscriptions.audiencePage(of: message.topicKey, after: after, limit: size)
                    : try await subscriptions.audienceRange(of: message.topicKey, after: after, through: through)
                return (
                    rows.map { ReceiptReport.Silent(device: $0.device, person: nil, platform: $0.platform) },
                    Self.next(
                        after: rows.last?.device, marked: !audience.marks.isEmpty, through: through,
                        full: rows.count == size)
                )
            }, acknowledged: { try await receipts.acknowledged(message: message.id, devices: $0.map(\.device)) })
    }

    /// How many audience rows a read of the report takes: enough, at the share of the audience that has not
    /// acknowledged, to find `limit` of them and one more (which says whether a page follows) in one read, with a
    /// fifth to spare; at least `ReachAudience.pageSpan`, at most `scanLimit`, whole spans between marks.
    static func readSize(limit: Int, audience: Int64, acknowledged: Int64) -> Int {
        let silentShare =
            audience > 0 ? max(0.02, Double(audience - min(acknowledged, audience)) / Double(audience)) : 1
        let wanted = Int((Double(limit + 1) / silentShare * 1.2).rounded(.up))
        let spans = (wanted + ReachAudience.pageSpan - 1) / ReachAudience.pageSpan
        return min(max(spans, 1) * ReachAudience.pageSpan, scanLimit)
    }

    /// Where the audience's next read starts after one that ended with `last`: between marks, the read's upper mark
    /// (nil after the last, unbounded, page); else after its last row when it was full (nil: the audience ended).
    static func next(after last: ObjectID?, marked: Bool, through: ObjectID?, full: Bool) -> ObjectID? {
        marked ? through : (full ? last : nil)
    }

    /// Reads the audience in device order from `cursor` through `read` (a page of rows and where the next read
    /// starts, nil at the end), leaving out those `acknowledged` names, until `limit` are found, the audience ends,
    /// or `scanLimit` rows were read; the cursor of what follows, if anything.
    private func silentPage(
        limit: Int, cursor: ObjectID?, size: Int,
        read: (ObjectID?, Int) async throws -> (rows: [ReceiptReport.Silent], next: ObjectID?),
        acknowledged: ([ReceiptReport.Silent]) async throws -> Set<ObjectID>
    ) async throws -> ([ReceiptReport.Silent], String?) {
        var found: [ReceiptReport.Silent] = []
        var after = cursor
        var scanned = 0
        while scanned < Self.scanLimit {
            let (rows, next) = try await read(after, size)
            scanned += rows.count
            let answered = rows.isEmpty ? [] : try await acknowledged(rows)
            for row in rows where !answered.contains(row.device) {
                if found.count == limit { return (found, found.last?.device.hex) }
                found.append(row)
            }
            guard let next else { return (found, nil) }
            after = next
        }
        return (found, after?.hex)
    }
}

import DAO
import FCM
import HubModel
import HubTime
import Mongo

/// Resolves a message to persons and groups into its deliveries, at every attempt: the persons named and the
/// members of the groups named (a person reached both ways counts once, as named), then every active device bound to
/// one of them, handed on a batch at a time to be sent; or a topic message's sample (`sample`, `cohort`): the topic's
/// registered devices the cohort picks. Nothing is written per device before its answer: an attempt
/// after one that may have sent (`isStarted`) leaves out the devices answered already.
///
/// A passive or active message is held back from a device in its quiet hours (`QuietHoursPolicy`): the device gets a
/// `quiet_deferrals` entry, due when its window ends, and its delivery is recorded `deferred` (so that it counts as
/// answered: a later attempt does not send it, and the message is sent once the other devices are answered).
struct FanOutResolver: Sendable {
    /// Whom a fan-out reaches: the persons and groups of a message's `to`, or the sample of its topic.
    enum FanOutAudience: Sendable {
        case recipients(Recipients)
        case sample(topic: String)

        /// The audience of a message sent device by device; nil for a topic message sent to its topic.
        init?(of message: Message) {
            switch (message.audience, message.recipients) {
            case (.persons, let recipients?): self = .recipients(recipients)
            case (.sample, _): self = .sample(topic: message.topicKey)
            default: return nil
            }
        }
    }

    let stores: FanOutStores
    /// Where quiet devices' sends are held back, and the clock quiet hours are read by; nil: none is held back.
    var quiet: QuietHoursStores? = nil

    /// Whether a resolution of `message` began in an earlier attempt (`relay.components.devices.resolving`): some of
    /// its devices may have been sent to, and answered.
    static func isStarted(_ message: Message) -> Bool {
        message.document[path: "relay.components.devices.resolving"]?.boolValue == true
    }

    /// How many persons' devices are looked up before they are handed on to be sent: the first batch small, so that
    /// sending starts within moments of the claim, the others large (the sends go while the next batch is read).
    static let personsInFirstBatch = 32, personsPerBatch = 1_024

    /// Finds `message`'s devices (of its persons and groups, or of its topic's sample), handing each batch to `found`
    /// (without the devices answered already when `leavingOutAnswered`), then, when `noting`, notes on the message,
    /// while `lease` holds it, how many devices it reaches. Returns that count, or nil when the lease no longer holds
    /// the message.
    /// - Throws: `DAOError`; `CancellationError` when the task is cancelled.
    func resolve(
        _ message: Message, audience: FanOutAudience, lease: String, leavingOutAnswered: Bool, noting: Bool = true,
        found: ([Delivery]) -> Void
    ) async throws -> Int? {
        let count: Int
        switch audience {
        case .recipients(let recipients):
            count = try await resolve(
                message, recipients: recipients, leavingOutAnswered: leavingOutAnswered,
                found: found)
        case .sample(let topic):
            count = try await resolveSample(message, topic: topic, leavingOutAnswered: leavingOutAnswered, found: found)
        }
        if noting {
            guard try await stores.deliveries.markResolved(message: message.id, lease: lease, count: count) else {
                return nil
            }
        }
        return count
    }

    /// How many of a topic's subscriptions are read at a time for a sample.
    static let subscriptionsPerPage = 1_000

    /// The devices of `topic`'s sample (`Broadcast.picks(device:)`: registered, wanting the topic, not dormant), a
    /// page of subscriptions at a time, each picked device looked up (registration, locale, quiet hours) and handed
    /// to `found`. Returns how many were picked.
    private func resolveSample(
        _ message: Message, topic: String, leavingOutAnswered: Bool,
        found: ([Delivery]) -> Void
    ) async throws -> Int {
        var after: ObjectID?
        var count = 0
        while true {
            try Task.checkCancellation()
            let page = try await stores.subscriptions.reachedPage(
                of: topic, after: after,
                limit: Self.subscriptionsPerPage)
            let picked = page.map(\.device).filter(message.broadcast.picks(device:))
            if !picked.isEmpty {
                let devices = try await stores.devices.devices(picked).values.filter { $0.state == .active }
                try await hand(
                    devices.sorted { $0.id < $1.id }.map { device in
                        Delivery(
                            message: message.id, device: device.id, person: device.person ?? "", group: nil,
                            platform: device.platform, registration: device.registration, via: .cohort,
                            locale: device.locale)
                    }, of: message, devices: devices, leavingOutAnswered: leavingOutAnswered, found: found,
                    count: &count)
            }
            guard page.count == Self.subscriptionsPerPage, let last = page.last?.device else { break }
            after = last
        }
        return count
    }

    /// Counts `deliveries`, leaves out those answered already (`leavingOutAnswered`) and those held back for quiet
    /// hours (of `devices`), and hands the rest to `found`.
    private func hand(
        _ deliveries: [Delivery], of message: Message, devices: [Device], leavingOutAnswered: Bool,
        found: ([Delivery]) -> Void, count: inout Int
    ) async throws {
        var deliveries = deliveries
        count += deliveries.count
        if leavingOutAnswered, !deliveries.isEmpty {
            let answered = try await stores.deliveries.answered(deliveries.map(\.id))
            deliveries.removeAll { answered.contains($0.id) }
        }
        let quietHours = Dictionary(
            devices.compactMap { device in device.quietHours.map { (device.id, $0) } },
            uniquingKeysWith: { first, _ in first })
        if !quietHours.isEmpty { deliveries = try await holdBack(deliveries, of: message, quietHours: quietHours) }
        if !deliveries.isEmpty { found(deliveries) }
    }

    /// The devices of the persons named and of the groups' members, each person once and none of those left out
    /// (`exceptPersons`); returns how many.
    private func resolve(
        _ message: Message, recipients: Recipients, leavingOutAnswered: Bool,
        found: ([Delivery]) -> Void
    ) async throws -> Int {
        // Each person once: named first, then through the first group (in the order given) they are a member of.
        // A batch's devices are sent while the next batch's are looked up, and a group's members are read a range at
        // a time (the first small), so the first sends do not wait for a whole roster.
        // The persons left out are as if reached already.
        var seen = Set(recipients.exceptPersons)
        // Unread counts: the message's number in each of its groups (taken while the first members are read; none
        // taken before on a first attempt), and the groups' numbers read so far.
        let numbering = Task { [unread = stores.unread] in
            guard let unread, !recipients.groups.isEmpty else { return [String: Int64]() }
            return try await unread.numbers(
                ofMessage: message.msiKey, in: recipients.groups, numberedBefore: leavingOutAnswered)
        }
        defer { numbering.cancel() }
        var numbers: [String: Int64]?
        var knownNumbers: [String: Int64] = [:]
        // Members of a group the message did not reach them through (left out, named, or reached through an earlier
        // group): its number there is read for them.
        var notThrough: [String: [String]] = [:]
        var waiting: [(person: String, group: String?)] = []
        var count = 0
        var batchSize = Self.personsInFirstBatch
        // A batch's devices are read as one range of persons until a range holds mostly others' devices.
        var byRange = true
        func flush() async throws {
            batchSize = Self.personsPerBatch
            try Task.checkCancellation()
            let groupOf = Dictionary(waiting.map { ($0.person, $0.group) }, uniquingKeysWith: { first, _ in first })
            waiting = []
            let persons = Array(groupOf.keys)
            // The mutes are read while the devices are.
            async let mutedReading = mutedPersons(of: message, groupOf: groupOf)
            var ranged: [Device]?
            if byRange {
                ranged = try await stores.devices.active(inRangeOf: persons)
                byRange = ranged != nil
            }
            let devices: [Device]
            if let ranged { devices = ranged } else { devices = try await stores.devices.active(ofPersons: persons) }
            let muted = try await mutedReading
            if numbers == nil { numbers = try await numbering.value }
            // Each person reached (a device of theirs found) counts the message unread: one range read a batch.
            let reached = Set(devices.compactMap(\.person))
            let unread =
                try await stores.unread?.count(
                    message.msiKey, numbers: numbers ?? [:], for: groupOf.filter { reached.contains($0.key) },
                    known: &knownNumbers) ?? [:]
            let deliveries = devices.compactMap { device -> Delivery? in
                guard let person = device.person, let group = groupOf[person] else { return nil }
                var delivery = Delivery(
                    message: message.id, device: device.id, person: person, group: group,
                    platform: device.platform, registration: device.registration, locale: device.locale)
                delivery.muted = muted.contains(person)
                delivery.unread = unread[person]?.total
                delivery.roomUnread = message.room.flatMap { unread[person]?.groups[$0] }
                return delivery
            }
            try await hand(
                deliveries, of: message, devices: devices, leavingOutAnswered: leavingOutAnswered,
                found: found, count: &count)
        }
        for person in recipients.persons where seen.insert(person).inserted {
            waiting.append((person, nil))
            if waiting.count >= batchSize { try await flush() }
        }
        for group in recipients.groups {
            for range in try await stores.groups.memberRanges(of: group) {
                for person in try await stores.groups.members(of: group, in: range) {
                    guard seen.insert(person).inserted else {
                        notThrough[group, default: []].append(person)
                        continue
                    }
                    waiting.append((person, group))
                    if waiting.count >= batchSize { try await flush() }
                }
            }
        }
        if !waiting.isEmpty { try await flush() }
        if numbers == nil { numbers = try await numbering.value }
        for (group, persons) in notThrough {
            if let number = numbers?[group] { try await stores.unread?.markRead(number, in: group, for: persons) }
        }
        return count
    }

    /// Of the persons of a batch (`groupOf`: the group each was reached through, nil when named), those who muted
    /// that group or chose `off` or `digest` for it in their settings (a mute without end; the digest holds it): one range read of the group's mutes and
    /// one of its choices a group. A message that breaks through preferences (`PreferencePolicy`) is muted for nobody.
    /// - Throws: `DAOError`.
    private func mutedPersons(of message: Message, groupOf: [String: String?]) async throws -> Set<String> {
        guard !message.breaksThroughPreferences else { return [] }
        var byGroup: [String: [String]] = [:]
        for (person, group) in groupOf { if let group { byGroup[group, default: []].append(person) } }
        var muted: Set<String> = []
        let now = stores.now()
        for (group, persons) in byGroup {
            async let chosen = stores.settings.choosing([.off, .digest], persons, scope: .group, id: group)
            muted.formUnion(try await stores.mutes.muted(persons, in: group, at: now))
            muted.formUnion(try await chosen)
        }
        return muted
    }

    /// `deliveries` less those held back because their device (of `quietHours`) is in its quiet hours now: each of
    /// those gets a deferral, due when its window ends, then its delivery is recorded `deferred` (in that order: a stop
    /// in between resolves the device again and finds the deferral stored already).
    /// - Throws: `DAOError`.
    private func holdBack(_ deliveries: [Delivery], of message: Message, quietHours: [ObjectID: QuietHours])
        async throws -> [Delivery]
    {
        guard let quiet else { return deliveries }
        let urgency = message.urgency
        let time = quiet.now()
        var held: [QuietDeferral] = []
        var deferred: [DeliveryOutcome] = []
        let rest = deliveries.filter { delivery in
            // A muted delivery makes no sound: it goes now, in the background.
            guard !delivery.muted,
                let due = QuietHoursPolicy.deferral(
                    for: urgency, overridePreferences: message.overridePreferences,
                    quietHours: quietHours[delivery.device], now: time)
            else { return true }
            held.append(
                QuietDeferral(
                    message: message.id, msiKey: message.msiKey, device: delivery.device,
                    registration: delivery.registration, platform: delivery.platform, quietTopic: "",
                    dueAt: due, person: delivery.person, group: delivery.group,
                    via: delivery.via == .cohort ? .cohort : nil, locale: delivery.locale))
            deferred.append(DeliveryOutcome(delivery, state: .deferred))
            return false
        }
        guard !held.isEmpty else { return deliveries }
        try await quiet.deferrals.schedule(held)
        try await quiet.deliveries.record(deferred)
        return rest
    }
}

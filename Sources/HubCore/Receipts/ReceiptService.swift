import DAO
import HubModel
import HubTime
import Logging
import Mongo

/// Receipts from the app (a message received, opened, acknowledged) and the rule of which a device may report: a
/// message it could have received, once per event. Every entry point that stores receipts calls `record`.
public struct ReceiptService: Sendable {
    /// The most entries one batch may hold.
    public static let maximumBatch = 500
    /// How long after an acknowledgement the person's other devices are told (ms): their own send, made or in flight,
    /// arrives first.
    static let acknowledgedNoticeDelayMS: Int64 = 2_000
    /// The longest response, in bytes of UTF-8 (a character can be any number of bytes).
    public static let maximumResponseBytes = 200

    let receipts: ReceiptDAO
    let messages: MessageDAO
    let subscriptions: SubscriptionDAO
    let rollouts: RolloutDAO
    let groups: GroupDAO
    let deliveries: DeliveryDAO
    let relayProgress: RelayProgressDAO
    /// Where a message's counted audience is stored once.
    let reachAudiences: ReachAudienceDAO
    /// The webhook outbox, where each new acknowledgement becomes a `message.acknowledged` event.
    let events: WebhookEventDAO
    /// Which persons acknowledged which messages to persons and groups.
    let personAcknowledgements: PersonAcknowledgementDAO
    /// The devices of a person who acknowledged, to tell the others.
    let devices: DeviceDAO
    /// The durable per-device sends, where the other devices' notices wait for the relay.
    let deferrals: QuietDeferralDAO
    /// Each person's unread messages, lowered by a read on any of their devices; nil when they are not counted
    /// (`UNREAD_COUNTS` off).
    let unread: PersonUnreadDAO?
    let cube: CubeCache
    let logger: Logger
    let now: UnixClock
    /// The messages that receipts name, read together for the requests that arrive at once.
    let messageReads: BatchingGate<ObjectID, Message?>
    /// The wishes of devices for the topics of their receipts' messages, with their turns, read together likewise.
    let wishReads: BatchingGate<WishQuery, [String: WishRecord]>
    /// The receipts accepted, stored and counted together likewise: one insert and two counts updates per
    /// message a batch, however many devices posted.
    let writes: BatchingGate<PlacedReceipt, Bool>

    /// A device's registration and the topics to check it wanted.
    struct WishQuery: Sendable {
        var registration: String
        var topics: [String]
    }

    /// A receipt to store, and where its message was sent (a topic message's channel and area).
    struct PlacedReceipt: Sendable {
        var receipt: Receipt
        var place: ReceiptDAO.Place?
    }

    init(
        database: MongoDatabase, cube: CubeCache, webhookSubscribers: WebhookSubscribers, countsUnread: Bool = false,
        logger: Logger, now: @escaping UnixClock
    ) {
        self.receipts = ReceiptDAO(database: database, now: now)
        self.messages = MessageDAO(database: database, now: now)
        self.subscriptions = SubscriptionDAO(database: database, now: now)
        self.rollouts = RolloutDAO(database: database, now: now)
        self.groups = GroupDAO(database: database, now: now)
        self.deliveries = DeliveryDAO(database: database, now: now)
        self.relayProgress = RelayProgressDAO(database: database)
        self.reachAudiences = ReachAudienceDAO(database: database)
        self.events = WebhookEventDAO(database: database, subscribers: webhookSubscribers, now: now)
        self.personAcknowledgements = PersonAcknowledgementDAO(database: database, now: now)
        self.devices = DeviceDAO(database: database, now: now)
        self.deferrals = QuietDeferralDAO(database: database, now: now)
        self.unread = countsUnread ? PersonUnreadDAO(database: database) : nil
        self.cube = cube
        self.logger = logger
        self.now = now
        self.messageReads = BatchingGate(maximumBatch: 256) { [messages] keys in
            let found = try await messages.messages(msiKeys: Array(Set(keys)))
            return keys.map { found[$0] }
        }
        self.wishReads = BatchingGate(maximumBatch: 256) { [subscriptions] queries in
            let wishes = try await subscriptions.wishes(
                of: queries.map(\.registration),
                for: Array(Set(queries.flatMap(\.topics))))
            return queries.map { query in (wishes[query.registration] ?? [:]).filter { query.topics.contains($0.key) } }
        }
        self.writes = BatchingGate(maximumBatch: ReceiptService.maximumBatch) { [receipts] placed in
            var places: [ObjectID: ReceiptDAO.Place] = [:]
            for item in placed { if let place = item.place { places[item.receipt.message] = place } }
            return try await receipts.store(placed.map(\.receipt), places: places)
        }
    }

    // MARK: Recording

    /// Stores `entries` from `device` (at most `maximumBatch`, checked by the caller's decoding) and says what became
    /// of each, in order. An entry is refused as `notARecipient` when the device could not have received its message
    /// or no message has its key (the same answer, so a device cannot learn which keys exist): a topic message
    /// reached the devices that wanted its topic when it was sent (`sendTime`), or, having no wish for it, while it
    /// is being rolled out; a message to persons and groups, the device's person named or a member of a group
    /// named; either way, a delivery to the device; and nothing before the message's send time has come. It is
    /// refused as `invalidResponse` when its response is not one the message offered (`ack.responses`) or, where it
    /// offered none, free text longer than `maximumResponseBytes`. The rest are stored in one insert; a receipt the
    /// device sent before is a duplicate, neither stored nor counted again. The batch's messages are read in one
    /// query, and so is each proof of receipt.
    /// - Throws: `DAOError`.
    public func record(_ entries: [ReceiptEntry], from device: Device) async throws -> [ReceiptOutcome] {
        var outcomes: [ReceiptOutcome?] = Array(repeating: nil, count: entries.count)
        var keys: [Int: ObjectID] = [:]
        for (index, entry) in entries.enumerated() {
            if let key = ObjectID(hex: entry.msiKey) {
                keys[index] = key
            } else {
                outcomes[index] = ReceiptOutcome(index: index, status: .rejected, code: .notARecipient)
            }
        }
        let wanted = Array(Set(keys.values))
        let found = Dictionary(
            zip(wanted, try await messageReads.submit(wanted)).compactMap { key, message in
                message.map { (key, $0) }
            }, uniquingKeysWith: { first, _ in first })
        let reachable = try await receivable(Array(found.values), by: device)
        var accepted: [(index: Int, receipt: Receipt)] = []
        for (index, entry) in entries.enumerated() where outcomes[index] == nil {
            guard let key = keys[index], let message = found[key], reachable.contains(message.id) else {
                outcomes[index] = ReceiptOutcome(index: index, status: .rejected, code: .notARecipient)
                continue
            }
            guard let response = Self.response(entry.response, for: entry.event, of: message) else {
                outcomes[index] = ReceiptOutcome(index: index, status: .rejected, code: .invalidResponse)
                continue
            }
            accepted.append(
                (
                    index,
                    Receipt(
                        message: message.id, device: device.id, person: device.person,
                        event: entry.event, response: response.text,
                        responseOffered: response.offered, at: entry.at,
                        platform: device.platform)
                ))
        }
        let places = Dictionary(
            found.values.map { ($0.id, Self.place(of: $0.topicKey)) }, uniquingKeysWith: { first, _ in first })
        let new = try await writes.submit(
            accepted.map { PlacedReceipt(receipt: $0.receipt, place: places[$0.receipt.message] ?? nil) })
        let byID = Dictionary(found.values.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // New acknowledgements, and any answer to a message that lets its persons change theirs.
        let answers = accepted.indices.filter { position in
            let receipt = accepted[position].receipt
            guard receipt.event == .acknowledged else { return false }
            return new[position] || byID[receipt.message].map(Self.answersChange) == true
        }
        var changed: Set<Int> = []
        for position in answers {
            let receipt = accepted[position].receipt
            guard let message = byID[receipt.message] else { continue }
            if try await acknowledgedHook(message, by: receipt, new: new[position]) { changed.insert(position) }
        }
        for position in accepted.indices where new[position] {
            let receipt = accepted[position].receipt
            guard receipt.event == .opened || receipt.event == .read, let message = byID[receipt.message] else {
                continue
            }
            await readHook(message, by: receipt)
        }
        for (position, item) in accepted.enumerated() {
            let stored = new[position] || changed.contains(position)
            outcomes[item.index] = ReceiptOutcome(index: item.index, status: stored ? .stored : .duplicate)
        }
        return outcomes.enumerated().map { $0.element ?? ReceiptOutcome(index: $0.offset, status: .rejected) }
    }

    // MARK: Interrupted counting

    /// How old a batch still pending on a message's counts must be before it is taken for one whose process died
    /// (a live store folds its batch within a moment of noting it).
    public static let interruptedAfterMilliseconds: Int64 = 60_000

    /// Counts the batches of receipts whose process died between storing them and counting them (pending for longer
    /// than `interruptedAfterMilliseconds`, or since before `cutoff` when given); idempotent. Returns how many.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recountInterrupted(before cutoff: Int64? = nil) async throws -> Int {
        let folded = try await receipts.recountInterrupted(before: cutoff ?? now() - Self.interruptedAfterMilliseconds)
        if folded > 0 {
            logger.notice("receipts whose counting was interrupted are counted", metadata: ["batches": "\(folded)"])
        }
        return folded
    }

    /// Runs `recountInterrupted` at start and then every `interval` until the task is cancelled; a failure is logged
    /// and tried again at the next turn.
    public func recountInterruptedLoop(every interval: Duration = .seconds(60)) async {
        while !Task.isCancelled {
            do {
                try await recountInterrupted()
            } catch {
                logger.warning("interrupted receipt counts could not be repaired", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Whether `message` lets its persons change their answer: a message to persons and groups whose `ack` says
    /// `changeable`.
    static func answersChange(_ message: Message) -> Bool {
        message.audience == .persons && AckRequest(document: message.document["ack"]?.documentValue)?.changeable == true
    }

    /// The one place where an acknowledgement leaves the hub: a new one (`new`: its receipt was stored now) becomes a
    /// `message.acknowledged` event (payload `msi_key`, `title`, `device`, `person`?, `response`?, `at`) in the webhook
    /// outbox and, for a message to persons and groups, the person's answer (`recordPersonAcknowledgement`). For a
    /// message that lets its persons change their answer (`answersChange`), an answer of a person who answered
    /// before (on any device, this one too) that differs from theirs becomes their answer and an event with
    /// `changed: true` and `previous_response`; the same answer again changes nothing. Returns whether the answer
    /// changed. The receipt is stored already, and a device posting it again gets `duplicate`: an outbox that cannot
    /// be written is logged, not answered to the device as a failure it could repair.
    func acknowledgedHook(_ message: Message, by receipt: Receipt, new: Bool) async throws -> Bool {
        if Self.answersChange(message), let person = receipt.person {
            switch try await personAcknowledgements.change(
                message: message.id, person: person, device: receipt.device, response: receipt.response,
                at: receipt.at)
            {
            case .changed(let previous):
                await events.emit(.acknowledged(message, by: receipt, changedFrom: .some(previous)), logger: logger)
                return true
            case .same:
                return false
            case .first:
                break
            }
        }
        await events.emit(.acknowledged(message, by: receipt), logger: logger)
        guard message.audience == .persons, let person = receipt.person else { return false }
        do {
            try await recordPersonAcknowledgement(message, by: person, on: receipt)
        } catch {
            logger.error(
                "a person's acknowledgement could not be recorded for their other devices",
                metadata: [
                    "msi_key": .string(message.msiKey.hex), "device": .string(receipt.device.hex),
                    "error": .string("\(error)"),
                ])
        }
        return false
    }

    /// A message to persons and groups read (`opened` or `read`) on one of its person's devices: it leaves their
    /// unread (`PersonUnreadDAO`, one conditional update), and their other devices are told in the background
    /// (`read: "1"` with the new count, through the relay's durable per-device sends). A failure is logged: the
    /// receipt is stored, and a device posting it again gets `duplicate`.
    func readHook(_ message: Message, by receipt: Receipt) async {
        guard let unread, message.audience == .persons, let person = receipt.person else { return }
        do {
            let named = message.recipients?.persons.contains(person) ?? false
            guard let counts = try await unread.markRead(message.msiKey, for: person, named: named) else { return }
            let others = try await devices.active(ofPersons: [person]).filter { $0.id != receipt.device }
            try await deferrals.schedule(
                others.map { device in
                    QuietDeferral.notice(
                        .read, message: message.id, msiKey: message.msiKey, device: device.id,
                        registration: device.registration, platform: device.platform, dueAt: now(),
                        unread: counts.total)
                })
        } catch {
            logger.error(
                "a read could not lower the person's unread count or tell their other devices",
                metadata: [
                    "msi_key": .string(message.msiKey.hex), "device": .string(receipt.device.hex),
                    "error": .string("\(error)"),
                ])
        }
    }

    /// A message to persons and groups is acknowledged by a person, on any of their devices: the first time, each
    /// other device of theirs is told (a background notice, `acknowledged: "1"`, queued for the
    /// relay's durable per-device sends), then the person is recorded as having answered (the escalation leaves all
    /// their devices alone, the report counts them). The notices first: a crash in between tells the devices again at
    /// the next acknowledgement, never leaves them untold.
    func recordPersonAcknowledgement(_ message: Message, by person: String, on receipt: Receipt) async throws {
        guard try await personAcknowledgements.acknowledged(message: message.id, persons: [person]).isEmpty else {
            return
        }
        // Every other active device of the person: the message to them reached all of them (a device that does not
        // have it takes the notice for nothing), and its own send may still be in flight or unrecorded.
        let others = try await devices.active(ofPersons: [person]).filter { $0.id != receipt.device }
        // A moment later than now: a send still in flight to the other device goes first.
        let time = now() + Self.acknowledgedNoticeDelayMS
        try await deferrals.schedule(
            others.map { device in
                QuietDeferral.notice(
                    .acknowledged, message: message.id, msiKey: message.msiKey, device: device.id,
                    registration: device.registration, platform: device.platform, dueAt: time)
            })
        _ = try await personAcknowledgements.record(
            message: message.id, person: person, device: receipt.device, at: receipt.at, response: receipt.response)
    }

    /// Which of `messages` `device` could have received (their `_id`s): sent already (no `send_at` to come), and of
    /// its topics, its person's persons and groups, or delivered to it.
    private func receivable(_ messages: [Message], by device: Device) async throws -> Set<ObjectID> {
        let time = now()
        let sent = messages.filter { RelayState(message: $0.document)?.waitsForSendTime(at: time) != true }
        var proven: Set<ObjectID> = []
        // Topic messages: the topic wanted when the message was sent, or, with no wish for it, a rollout of it under
        // way (the rollout reaches the device before it records its wish). A topic's sample reached only the devices
        // picked: those its deliveries name (below).
        let topicMessages = sent.filter { $0.audience == .topic }
        let topics = Array(Set(topicMessages.map(\.topicKey)))
        if !topics.isEmpty {
            let wishes = try await wishReads.submit(WishQuery(registration: device.registration, topics: topics))
            var rolling: Set<String> = []
            if wishes.count < topics.count { rolling = Set(try await rollouts.topicsUnderWay().map(\.topic)) }
            proven.formUnion(
                topicMessages.filter { message in
                    guard let wish = wishes[message.topicKey] else { return rolling.contains(message.topicKey) }
                    return wish.wanted(at: Self.sendTime(of: message))
                }.map(\.id))
        }
        // Messages to persons and groups: the device's person named, or a member of a group named.
        if let person = device.person {
            let addressed = sent.filter { $0.audience == .persons }
            proven.formUnion(addressed.filter { $0.recipients?.persons.contains(person) == true }.map(\.id))
            let viaGroups = addressed.filter { !proven.contains($0.id) && !($0.recipients?.groups.isEmpty ?? true) }
            if !viaGroups.isEmpty {
                let memberOf = Set(try await groups.groups(of: person))
                proven.formUnion(
                    viaGroups.filter { $0.recipients?.groups.contains(where: memberOf.contains) == true }
                        .map(\.id))
            }
        }
        // Anything else the hub sent to the device itself (its person changed since, or a re-send).
        let unproven = sent.filter { !proven.contains($0.id) }.map(\.id)
        if !unproven.isEmpty {
            proven.formUnion(try await deliveries.delivered(unproven, to: device.id))
        }
        return proven
    }

    /// When `message` went to its topic's audience (Unix ms): its send time (`send_at`) when it had one, else when
    /// the hub accepted it.
    static func sendTime(of message: Message) -> Int64 {
        max(message.timestamp, RelayState(message: message.document)?.sendAt ?? message.timestamp)
    }

    /// A receipt's response as stored: none, one the message offered, or free text.
    struct AcceptedResponse: Equatable {
        var text: String?
        var offered: Bool
    }

    /// The response `response` with `event` of `message` stands for; nil when it may not come with it. Only an
    /// acknowledgement carries one: one of the message's `ack.responses` when it offered some (required then), else
    /// free text of at most `maximumResponseBytes`, or none.
    static func response(_ response: String?, for event: Receipt.Event, of message: Message) -> AcceptedResponse? {
        let response = normalised(response)
        guard event == .acknowledged else { return response == nil ? AcceptedResponse(text: nil, offered: false) : nil }
        let offered = message.document["ack"]?.documentValue?["responses"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard offered.isEmpty else {
            guard let response, offered.contains(response) else { return nil }
            return AcceptedResponse(text: response, offered: true)
        }
        guard (response?.utf8.count ?? 0) <= maximumResponseBytes else { return nil }
        return AcceptedResponse(text: response, offered: false)
    }

    /// An empty response is none.
    static func normalised(_ response: String?) -> String? {
        guard let response, !response.isEmpty else { return nil }
        return response
    }

    /// The channel and area of a topic key ("<channel hex>-<area hex>-<subject hex>"); nil for none.
    static func place(of topicKey: String) -> ReceiptDAO.Place? {
        let parts = topicKey.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.utf8.count == 24 }) else { return nil }
        return ReceiptDAO.Place(channel: String(parts[0]), area: String(parts[1]))
    }
}

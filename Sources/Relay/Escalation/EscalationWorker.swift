import DAO
import FCM
import Foundation
import HubModel
import HubTime
import Logging
import Mongo

/// Reminds the devices that have not acknowledged a message that asked them to, for the hub's life, beside the outbox
/// worker whose sender, gate and send rate it shares (`PacedSends`).
///
/// Any number of replicas run one each: a message whose next step has come (`ack.next_at`) is claimed under a lease in
/// the database (`AcknowledgementDAO`); nothing lives only in one process. A step is a round of re-sends or the end:
/// - a round, while fewer than `resend` were made: the message's audience (its deliveries, fixed when it was sent,
///   `AckAudience`) is read a page at a time in delivery order, the devices with an `acknowledged` receipt are left
///   out (and, for a message to persons and groups, every device of a person who acknowledged on any of their
///   devices: `PersonAcknowledgementDAO`), and every other one still registered gets the message again by token, one urgency level up and at least
///   time-sensitive (`RelayMessage.Urgency.escalated`: APNs interruption level and Android priority follow from the
///   mapping), through the shared gate and pacer. Each page's counts are added to the round (`ack.rounds`) with how
///   far it got, so a replica that takes over resumes after it. The next step is due `within_s` after the round.
/// - the end, after the last round's `within_s` (or at once when the message's ttl ran out): the devices that never
///   acknowledged, and their persons (each with their devices), are emitted once as `message.unacknowledged`
///   (nothing when everyone answered),
///   and the escalation is marked finished.
///
/// At least once: a replica that dies after sending a page and before recording it leaves that page to be re-sent by
/// the next, and one that dies between emitting the event and marking the end leaves it to be emitted again.
public struct EscalationWorker: Sendable {
    /// How the worker claims and sends.
    public struct Configuration: Sendable {
        /// How long a claim holds a message; renewed between pages while more than half of it is gone.
        public var lease: Duration = .seconds(60)
        /// How often due messages are looked for.
        public var poll: Duration = .seconds(1)
        /// Deliveries read (and receipts looked up) at a time.
        public var pageSize = 500
        /// Re-sends in flight at once.
        public var inFlight = 100

        public init() {}
    }

    let acknowledgements: AcknowledgementDAO
    let deliveries: DeliveryDAO
    let receipts: ReceiptDAO
    /// The persons who acknowledged a message to persons and groups, on any device.
    let personAcknowledgements: PersonAcknowledgementDAO
    let devices: DeviceDAO
    let events: WebhookEventDAO
    /// The outbox worker's per-device lane: one rate and one gate for every per-device send of the process.
    let lane: DeviceLane
    let configuration: Configuration
    let logger: Logger
    let now: UnixClock
    /// This process's name in the leases it takes.
    let owner: String

    /// The worker for `database`, sending through `lane` (the outbox worker's); nil without one (a worker built
    /// without `FanOutStores` sends to no device).
    public init?(
        database: MongoDatabase, lane: DeviceLane?, webhookSubscribers: WebhookSubscribers,
        configuration: Configuration = Configuration(), logger: Logger,
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        guard let lane else { return nil }
        self.acknowledgements = AcknowledgementDAO(database: database, now: now)
        self.deliveries = DeliveryDAO(database: database, now: now)
        self.receipts = ReceiptDAO(database: database, now: now)
        self.personAcknowledgements = PersonAcknowledgementDAO(database: database, now: now)
        self.devices = DeviceDAO(database: database, now: now)
        self.events = WebhookEventDAO(database: database, subscribers: webhookSubscribers, now: now)
        self.lane = lane
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.owner = "escalation-\(ProcessInfo.processInfo.hostName)-\(getpid())-\(ObjectID().hex.suffix(8))"
    }

    /// Claims and takes due steps until the task is cancelled; a step under way stops at its next page, its lease
    /// given back.
    public func run() async {
        await PollingLoop.run(
            logger: logger, failure: "an escalation step failed",
            idle: { try? await Task.sleep(for: configuration.poll) }
        ) {
            try await step()
        }
    }

    /// One pass of `run()`: claims the most overdue message and takes its step; false when none is due.
    /// - Throws: `DAOError` when the database fails.
    func step() async throws -> Bool {
        guard
            let (progress, lease) = try await acknowledgements.claim(
                owner: owner, leaseMS: configuration.lease.milliseconds)
        else { return false }
        try await step(progress, lease: lease)
        return true
    }

    // MARK: Steps

    /// Takes the step `progress` is due for under `lease`: a round of re-sends, or the end.
    func step(_ progress: AckProgress, lease: String) async throws {
        let message = progress.message
        let relayMessage = QuietDeferralSender.relayMessage(message).map { original in
            var escalated = original
            escalated.urgency = original.urgency.escalated
            return escalated
        }
        if progress.round < progress.request.resend, let relayMessage, !relayMessage.isExpired(at: now()) {
            try await resend(progress, as: relayMessage, lease: lease)
        } else {
            try await end(progress, lease: lease)
        }
    }

    /// One round of re-sends to the devices not acknowledged, resumed after `progress.cursor`.
    private func resend(_ progress: AckProgress, as relayMessage: RelayMessage, lease: String) async throws {
        let id = progress.message.id
        let round = progress.round + 1
        let leaseMS = configuration.lease.milliseconds
        guard try await acknowledgements.open(round: round, message: id, lease: lease, leaseMS: leaseMS) else { return }
        let held = holding(id, lease: lease, until: now() + leaseMS)
        var cursor = progress.cursor
        while true {
            if Task.isCancelled { return try await acknowledgements.release(message: id, lease: lease) }
            guard try await stillHeld(held) else { return }
            let page = try await deliveries.page(of: id, after: cursor, limit: configuration.pageSize)
            guard let last = page.last else { break }
            let silent = try await unanswered(page, of: progress.message)
            let counts = try await resend(progress.message, as: relayMessage, to: silent)
            if Task.isCancelled { return try await acknowledgements.release(message: id, lease: lease) }
            guard
                try await acknowledgements.progress(
                    round: round, message: id, lease: lease, cursor: last.id,
                    counts: counts)
            else { return }
            cursor = last.id
            if page.count < configuration.pageSize { break }
        }
        let nextAt = now() + progress.request.withinSeconds * 1000
        guard try await acknowledgements.close(round: round, message: id, lease: lease, nextAt: nextAt) else { return }
        logger.info(
            "re-sent a message to the devices that had not acknowledged it",
            metadata: ["msi_key": "\(progress.message.msiKey)", "round": "\(round)"])
    }

    /// Re-sends `message` (mapped as `relayMessage`) to the devices of `silent`, `inFlight` at a time; their counts.
    private func resend(_ message: Message, as relayMessage: RelayMessage, to silent: [Delivery]) async throws
        -> AckRoundCounts
    {
        var counts = AckRoundCounts()
        counts.silent = Int64(silent.count)
        guard !silent.isEmpty else { return counts }
        let found = try await devices.devices(silent.map(\.device))
        enum Result: Sendable { case sent, failed, unregistered, skipped, cancelled }
        await withTaskGroup(of: Result.self) { group in
            var running = 0
            func take(_ result: Result) {
                switch result {
                case .sent: counts.sent += 1
                case .failed: counts.failed += 1
                case .unregistered: counts.unregistered += 1
                case .skipped: counts.skipped += 1
                case .cancelled: break
                }
            }
            for delivery in silent {
                guard let device = found[delivery.device], device.state == .active, delivery.state != .unregistered
                else {
                    counts.skipped += 1
                    continue
                }
                while running >= configuration.inFlight, let result = await group.next() {
                    running -= 1
                    take(result)
                }
                if Task.isCancelled { break }
                // In the device's language when the message has it.
                let target = DeviceLane.Device(
                    registration: device.registration, locale: device.locale, delivery: delivery)
                running += 1
                group.addTask { [lane] in
                    switch await lane.send(relayMessage, to: target) {
                    case .sent: .sent
                    case .retryLater, .paused, .failed: .failed
                    case .unregistered: .unregistered
                    case .cancelled: .cancelled
                    }
                }
            }
            for await result in group { take(result) }
        }
        // The devices FCM called gone are marked before the round's counts are.
        await lane.drain()
        return counts
    }

    /// The deliveries of `page` not answered: their device has no acknowledgement of `message`, nor (a message to
    /// persons and groups, acknowledged by a person on any of their devices) has their person. A topic message and a
    /// sample keep per-device acknowledgement.
    private func unanswered(_ page: [Delivery], of message: Message) async throws -> [Delivery] {
        let answered = try await receipts.acknowledged(message: message.id, devices: page.map(\.device))
        let silent = page.filter { !answered.contains($0.device) }
        guard message.audience == .persons, !silent.isEmpty else { return silent }
        let persons = try await personAcknowledgements.acknowledged(
            message: message.id, persons: silent.map(\.person).filter { !$0.isEmpty })
        return silent.filter { !persons.contains($0.person) }
    }

    // MARK: The step's lease

    /// The lease of a step under way on message `id`, as the runtime keeps leases (`LeaseKeeper`): renewed between
    /// pages once half of it is gone.
    private func holding(_ id: ObjectID, lease: String, until: Int64) -> LeaseKeeper<ObjectID> {
        let keeper = LeaseKeeper<ObjectID>(duration: configuration.lease, now: now) { [acknowledgements] due, until in
            var kept: Set<ObjectID> = []
            for (id, lease) in due where try await acknowledgements.renew(message: id, lease: lease.owner, until: until)
            {
                kept.insert(id)
            }
            return kept
        }
        keeper.hold(id, RelayLease(owner: lease, until: until))
        return keeper
    }

    /// Whether the step's lease still holds, renewed first when less than half of it is left.
    /// - Throws: `DAOError` when the renewal fails.
    private func stillHeld(_ keeper: LeaseKeeper<ObjectID>) async throws -> Bool {
        let half = configuration.lease.milliseconds / 2
        return try await keeper.renewDue(leftBelow: { _ in half }) != 1
    }

    /// The end: `message.unacknowledged` naming the devices that never acknowledged and their persons (none when
    /// every device did), then the escalation marked finished.
    private func end(_ progress: AckProgress, lease: String) async throws {
        let id = progress.message.id
        let held = holding(id, lease: lease, until: progress.leaseUntil ?? now())
        var cursor: String?
        var silent: [Delivery] = []
        while true {
            guard try await stillHeld(held) else { return }
            let page = try await deliveries.page(of: id, after: cursor, limit: configuration.pageSize)
            guard let last = page.last else { break }
            silent += try await unanswered(page, of: progress.message)
            cursor = last.id
            if page.count < configuration.pageSize { break }
        }
        guard try await stillHeld(held) else { return }
        if !silent.isEmpty {
            // A topic message's deliveries name no person: the device's own, as it is now.
            let unnamed = silent.filter { $0.person.isEmpty }.map(\.device)
            let bound = unnamed.isEmpty ? [:] : try await devices.devices(unnamed)
            var persons: [String] = []
            var devicesOf: [String: [ObjectID]] = [:]
            for delivery in silent {
                let person = delivery.person.isEmpty ? bound[delivery.device]?.person : delivery.person
                guard let person else { continue }
                if devicesOf[person] == nil { persons.append(person) }
                devicesOf[person, default: []].append(delivery.device)
            }
            await events.emit(
                .unacknowledged(
                    progress.message, devices: silent.map(\.device),
                    persons: persons.map { ($0, devicesOf[$0] ?? []) }),
                logger: logger)
        }
        guard try await acknowledgements.finish(message: progress.message, lease: lease, silent: Int64(silent.count))
        else { return }
        logger.info(
            "an escalation ended",
            metadata: [
                "msi_key": "\(progress.message.msiKey)",
                "unacknowledged": "\(silent.count)",
            ])
    }
}

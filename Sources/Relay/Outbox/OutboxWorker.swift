import DAO
import FCM
import Foundation
import Logging
import Mongo

/// Relays what the outbox holds to FCM: the loop that joins the worker's parts, each with one job.
///
/// A message stored by this process is stored `.direct`: with this worker's name and a number, in the insert
/// itself, and handed over in memory (`OutboxHandoff`). It costs no claim, and nothing is written for it when
/// FCM takes every component: the worker's progress record (`ProgressReporter`) says, in one write per
/// `recordWindow` for all of them, how far it got. Messages stored elsewhere or without a lease, retries,
/// scheduled sends and the messages of a process that died (handed back from its record) are claimed from
/// the database (`OutboxClaimer`) when the worker has room, checked every `pollInterval`.
///
/// Leases are short (`lease`): a claimed message's is renewed in one command for every message still held
/// (`HeldMessages`), and the progress record's keeps every direct message. So a process that dies is taken over
/// within a lease; nothing is sent once this worker no longer knows its lease to hold for a while yet
/// (`MessageSender`). Other outcomes go through `OutcomeRecorder`: one bulk write per `recordWindow` for all of
/// them. FCM's 503, 429 and time-outs pause every send to the project (`RelayGate`), and the other replicas
/// through `relay_pause` (`SharedPause`). Delivery is at least once: a process killed after FCM took a component
/// but before it was written sends that component again, so at most the sends in flight and those of the last
/// window are sent twice.
///
/// A correction or withdrawal of a message being sent reaches its sender at once in this process
/// (`OutboxHandoff.edited`), and from other processes through one read of the messages being sent every quarter of a
/// second (`HeldMessages.watchEdits`): the sender stops and goes on as the message now is (`MessageSender`).
///
/// A message to persons and groups goes out device by device instead (`FanOutSender`, given `FanOutStores`): its
/// deliveries resolved once and sent many at a time through the same gate, paced by `sendRate` for every replica,
/// each answer written in bulk to `deliveries`.
public final class OutboxWorker: Sendable {
    /// How the worker sends, leases and retries.
    public struct Configuration: Sendable {
        /// Messages being sent at once, so FCM requests in flight (a message sends its components in turn).
        public var concurrency: Int
        /// How long a lease holds a message; renewed every quarter of it while the message is held.
        public var lease: Duration
        /// How often to look for due messages (and for pauses stored by other replicas).
        public var pollInterval: Duration
        /// How long an outcome waits for others before they are written together.
        public var recordWindow: Duration
        /// Backoff for what FCM could not take yet, per message.
        public var retry: RetryPolicy
        /// The FCM project whose pauses this worker shares with other replicas.
        public var project: String
        /// Requests in flight at most for one message to persons and groups (one per device); the gate lets them
        /// through beside `concurrency`.
        public var fanOutInFlight: Int
        /// Per-device sends per second, all replicas together (`FCM_SEND_RATE`).
        public var sendRate: Int

        public init(
            concurrency: Int = 16, lease: Duration = .seconds(5), pollInterval: Duration = .milliseconds(500),
            recordWindow: Duration = .milliseconds(20), retry: RetryPolicy = RetryPolicy(),
            project: String = "-", fanOutInFlight: Int = 500, sendRate: Int = 10_000
        ) {
            self.fanOutInFlight = max(fanOutInFlight, 1)
            self.sendRate = max(sendRate, 1)
            self.concurrency = max(concurrency, 1)
            self.lease = lease
            self.pollInterval = pollInterval
            self.recordWindow = recordWindow
            self.retry = retry
            self.project = project
        }
    }

    public let configuration: Configuration
    /// This worker's name: claims add a part of their own, and so does each progress record.
    public let owner: String
    /// The name of the progress record the messages this process stores go under now: a new one after another
    /// worker took the last over.
    private let directOwner: RecordName
    private let outbox: OutboxDAO
    private let handoff: OutboxHandoff
    let metrics: RelayMetrics
    private let logger: Logger
    private let now: UnixClock
    let gate: RelayGate
    /// The messages this worker holds (waiting, being sent, or their last write not yet done) and their leases.
    private let held: HeldMessages
    private let recorder: OutcomeRecorder
    private let reporter: ProgressReporter
    let pauses: SharedPause
    let sender: MessageSender
    /// Paces the per-device sends of messages to persons and groups (nil without `FanOutStores`).
    let pacer: SendPacer?

    /// The per-device send lane of this worker (its gate and pacer, its mapping), for the other senders to device
    /// of the process; nil when it sends to no device (built without `FanOutStores`).
    public let deviceLane: DeviceLane?

    public init(
        outbox: OutboxDAO,
        progress: RelayProgressDAO,
        pauses: RelayPauseDAO,
        handoff: OutboxHandoff,
        sender: any FCMSending,
        mapping: FCMMappingOptions = FCMMappingOptions(),
        fanOut stores: FanOutStores? = nil,
        quietHours: QuietHoursStores? = nil,
        observers: [any MessageFinishing] = [],
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "msi-hub.relay"),
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.outbox = outbox
        self.handoff = handoff
        self.configuration = configuration
        let metrics = RelayMetrics()
        self.metrics = metrics
        self.logger = logger
        self.now = now
        // A message to persons and groups has many requests in flight; the topic components' slots stay theirs.
        let fanOutSlots = stores == nil ? 0 : configuration.fanOutInFlight
        let gate = RelayGate(concurrency: configuration.concurrency + fanOutSlots, now: now)
        self.gate = gate
        let held = HeldMessages(
            outbox: outbox, handoff: handoff, lease: configuration.lease, metrics: metrics,
            logger: logger, now: now)
        self.held = held
        // A correction or withdrawal stored by this process stops the sender of its message at once.
        handoff.onEdit { held.edited($0) }
        // A message is let go once the write that ends its lease is done, not before: until then its lease is
        // renewed and no claim (of this worker or another) takes it again.
        let recorder = OutcomeRecorder(
            outbox: outbox, window: configuration.recordWindow, metrics: metrics,
            logger: logger
        ) { ended, written in
            for (owner, seqs) in held.release(ended) {
                if written {
                    handoff.done(seqs, owner: owner)
                } else {
                    // Not on record: the message goes back to the outbox before the record may pass it.
                    for seq in seqs { handoff.unsettled(DirectRelay(owner: owner, seq: seq)) }
                }
            }
        }
        self.recorder = recorder
        let owner =
            "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(ObjectID().hex.suffix(8))"
        self.owner = owner
        let directOwner = RecordName("\(owner)/1")
        self.directOwner = directOwner
        let limit = 16 * configuration.concurrency
        let reporter = ProgressReporter(
            progress: progress, outbox: outbox, handoff: handoff, leaseMS: configuration.lease.milliseconds,
            window: configuration.recordWindow, metrics: metrics, logger: logger, now: now
        ) { lostOwner in
            // Another worker hands this record's messages back: send none of them, and go on under a new name.
            guard let renamed = directOwner.rename(from: lostOwner, to: "\(owner)/\(ObjectID().hex.suffix(8))") else {
                return
            }
            held.forget(directOf: lostOwner)
            handoff.open(owner: renamed, limit: limit, margin: configuration.lease.milliseconds / 2)
        }
        self.reporter = reporter
        let pauses = SharedPause(
            pauses: pauses, project: configuration.project, owner: owner, gate: gate,
            pollInterval: configuration.pollInterval, metrics: metrics, logger: logger, now: now)
        self.pauses = pauses
        // One sender of per-device requests for the fan-out, the re-sends and the held-back sends: one rate, one gate.
        let paced = stores.map { stores in
            PacedSends(
                sender: sender, gate: gate, classifier: OutcomeClassifier(gate: gate),
                pacer: SendPacer(
                    window: RateWindow(
                        rates: stores.rates, key: "fcm-send:\(configuration.project)",
                        limit: configuration.sendRate, now: now),
                    chunk: max(configuration.sendRate / 10, 1), now: now),
                pauses: pauses, metrics: metrics, now: now)
        }
        self.pacer = paced?.pacer
        let lane = stores.flatMap { stores in
            paced.map {
                DeviceLane(sends: $0, mapping: mapping, gone: GoneDevices(devices: stores.devices, logger: logger))
            }
        }
        self.deviceLane = lane
        let fanOut = stores.flatMap { stores in
            lane.map { lane in
                FanOutSender(
                    lane: lane, held: held,
                    resolver: FanOutResolver(stores: stores, quiet: quietHours), deliveries: stores.deliveries,
                    recorder: DeliveryRecorder(deliveries: stores.deliveries, logger: logger),
                    inFlight: configuration.fanOutInFlight, logger: logger, now: now)
            }
        }
        self.sender = MessageSender(
            sender: sender, outbox: outbox, mapping: mapping, retry: configuration.retry, gate: gate,
            classifier: OutcomeClassifier(gate: gate), held: held, handoff: handoff, recorder: recorder,
            reporter: reporter, pauses: pauses, metrics: metrics, logger: logger, now: now, fanOut: fanOut,
            quiet: quietHours.map { QuietTopicHold(stores: $0, logger: logger, now: $0.now) },
            observers: observers)
    }

    private enum Event: Sendable {
        case sent
        case woke(notified: Bool)
    }

    /// Runs until the task is cancelled; then lets the sends under way finish, hands back the leases of
    /// what it did not send, writes every outcome and returns.
    public func run() async {
        logger.info("relay worker started", metadata: ["owner": "\(owner)"])
        let concurrency = configuration.concurrency
        // Generous: every message this process stores should come in memory; the limit only bounds what a
        // slow FCM leaves waiting here (a pause stops leases at once).
        handoff.open(owner: directOwner.current, limit: 16 * concurrency, margin: held.leaseMS / 2)
        // Not children of this task: they must outlive its cancellation until the sends have finished.
        let keeper = Task { await held.keepRenewed() }
        let edits = Task { await held.watchEdits() }
        let reporting = Task { await reporter.run() }
        let watcher = Task { await pauses.watch() }
        var ready: [Message] = []
        var claimer = OutboxClaimer(
            outbox: outbox, owner: owner, held: held, pollInterval: configuration.pollInterval,
            metrics: metrics, logger: logger, now: now)
        await withTaskGroup(of: Event.self) { group in
            var running = 0
            var waiting = false
            while !Task.isCancelled {
                let direct = handoff.take(.max)
                if !direct.isEmpty {
                    ready += direct.filter(held.hold(direct:))
                    metrics.handedOver(direct.count)
                }
                let paused = gate.pause() != nil
                handoff.setPaused(paused)
                if !paused {
                    while running < concurrency, !ready.isEmpty {
                        let message = ready.removeFirst()
                        running += 1
                        group.addTask {
                            await self.sender.send(message); return .sent
                        }
                    }
                }
                // Claims fill what memory does not: when slots are free and a poll is due or a message was
                // stored without a lease.
                if !paused, ready.count < concurrency, running < concurrency, claimer.isDue {
                    let claim = await claimer.claim(limit: 4 * concurrency - running - ready.count)
                    ready += claim.messages
                    // A full claim suggests more are due: claim again as soon as there is room.
                    if !ready.isEmpty && running < concurrency || claim.full { continue }
                }
                handoff.setBacklog(ready.count + running)
                if !waiting {
                    waiting = true
                    // With no room to claim, the next finished send wakes the loop anyway.
                    let roomToClaim = ready.count < concurrency && running < concurrency
                    let untilClaim = roomToClaim ? claimer.untilDue : configuration.pollInterval
                    let timeout = max(gate.pause() ?? untilClaim, .milliseconds(1))
                    group.addTask { .woke(notified: await self.handoff.wait(timeout: timeout)) }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .sent:
                    running -= 1
                case .woke(let notified):
                    waiting = false
                    // A message stored without a lease: claim it soon. A wake-up for messages in memory costs the
                    // database nothing.
                    if notified, handoff.takeStoredWithoutLease() { claimer.hurry() }
                }
            }
            // Shutting down: sends under way finish (those waiting for FCM to recover give up).
            while running > 0, let event = await group.next() {
                if case .sent = event { running -= 1 }
            }
        }
        // What was not started goes back to the database for any worker, at once.
        for message in handoff.close() {
            if held.hold(direct: message) { ready.append(message) }
        }
        for message in ready {
            if let lease = held.lease(of: message.id) { recorder.record(.release(id: message.id, lease: lease.owner)) }
        }
        await recorder.drain()
        keeper.cancel()
        edits.cancel()
        watcher.cancel()
        reporting.cancel()
        await keeper.value
        await edits.value
        await watcher.value
        await reporting.value
        // Not cancelled with this task: the last report must land.
        await Task { [reporter] in await reporter.finish() }.value
        logger.info("relay worker stopped", metadata: ["owner": "\(owner)"])
    }

    /// One claim of what is due now (none while paused) and its sends, outcomes written; the count (tests' fake clock).
    func step(limit: Int? = nil) async -> Int {
        guard gate.pause() == nil else { return 0 }
        var claimer = OutboxClaimer(
            outbox: outbox, owner: owner, held: held, pollInterval: configuration.pollInterval,
            metrics: metrics, logger: logger, now: now)
        let claim = await claimer.claim(limit: limit ?? 4 * configuration.concurrency)
        await withTaskGroup(of: Void.self) { group in
            for message in claim.messages { group.addTask { await self.sender.send(message) } }
        }
        await recorder.drain()
        return claim.messages.count
    }
}

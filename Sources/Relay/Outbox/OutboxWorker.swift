import DAO
import FCM
import Foundation
import Logging
import Mongo
import Synchronization

/// Relays what the outbox holds to FCM: sends each unsent component of a message under a lease, records
/// each outcome as it happens, and keeps the leases of the messages it still holds alive.
///
/// A message stored by this process is stored `.direct`: with this worker's name and a number, in the insert
/// itself, and handed over in memory (`OutboxHandoff`). It costs no claim, and nothing is written for it when
/// FCM takes every component: the worker's progress record (`ProgressReporter`) says, in one write per
/// `recordWindow` for all of them, how far it got. Messages stored elsewhere or without a lease, retries,
/// scheduled sends and the messages of a process that died (handed back from its record) are claimed from
/// the database (find, lease, read back) when the worker has room, checked every `pollInterval`.
///
/// Leases are short (`lease`): a claimed message's is renewed in one command for every message still held,
/// and the progress record's keeps every direct message. So a process that dies is taken over within a
/// lease; nothing is sent once this worker no longer knows its lease to hold for a while yet. Other outcomes
/// go through `OutcomeRecorder`: one bulk write per `recordWindow` for all of them.
/// FCM's 503, 429 and time-outs pause every send to the project (`RelayGate`), and the other replicas
/// through `relay_pause`. Delivery is at least once: a process killed after FCM took a component but
/// before it was written sends that component again, so at most the sends in flight and those of the last
/// window are sent twice.
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

        public init(concurrency: Int = 16, lease: Duration = .seconds(5), pollInterval: Duration = .milliseconds(500),
                    recordWindow: Duration = .milliseconds(20), retry: RetryPolicy = RetryPolicy(), project: String = "-") {
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
    private let pauses: RelayPauseDAO
    private let handoff: OutboxHandoff
    private let sender: any FCMSending
    private let mapping: FCMMappingOptions
    private let metrics: RelayMetrics
    private let logger: Logger
    private let now: @Sendable () -> Int64
    private let gate: RelayGate
    private let recorder: OutcomeRecorder
    private let reporter: ProgressReporter
    /// The messages this worker holds (waiting, being sent, or their last write not yet done), with their
    /// lease as last confirmed.
    private let held = HeldLeases()
    /// The latest pause end this worker stored for the other replicas.
    private let sharedPause = Mutex<Int64>(0)

    public init(
        outbox: OutboxDAO,
        progress: RelayProgressDAO,
        pauses: RelayPauseDAO,
        handoff: OutboxHandoff,
        sender: any FCMSending,
        mapping: FCMMappingOptions = FCMMappingOptions(),
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "msi-hub.relay"),
        now: @escaping @Sendable () -> Int64 = UnixTime.nowMilliseconds
    ) {
        self.outbox = outbox
        self.pauses = pauses
        self.handoff = handoff
        self.sender = sender
        self.mapping = mapping
        self.configuration = configuration
        let metrics = RelayMetrics()
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.gate = RelayGate(concurrency: configuration.concurrency, now: now)
        // A message is let go once the write that ends its lease is done, not before: until then its lease is
        // renewed and no claim (of this worker or another) takes it again.
        self.recorder = OutcomeRecorder(outbox: outbox, window: configuration.recordWindow, metrics: metrics,
                                        logger: logger) { [held, handoff] ended, written in
            for (owner, seqs) in held.release(ended) {
                if written {
                    handoff.done(seqs, owner: owner)
                } else {
                    // Not on record: the message goes back to the outbox before the record may pass it.
                    for seq in seqs { handoff.unsettled(DirectRelay(owner: owner, seq: seq)) }
                }
            }
        }
        let owner = "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/\(ObjectID().hex.suffix(8))"
        self.owner = owner
        let directOwner = RecordName("\(owner)/1")
        self.directOwner = directOwner
        let limit = 16 * configuration.concurrency
        self.reporter = ProgressReporter(
            progress: progress, outbox: outbox, handoff: handoff, leaseMS: configuration.lease.milliseconds,
            window: configuration.recordWindow, metrics: metrics, logger: logger, now: now
        ) { [held, handoff] lostOwner in
            // Another worker hands this record's messages back: send none of them, and go on under a new name.
            let renamed = directOwner.name.withLock { current -> String? in
                guard current == lostOwner else { return nil }
                current = "\(owner)/\(ObjectID().hex.suffix(8))"
                return current
            }
            guard let renamed else { return }
            held.forget(directOf: lostOwner)
            handoff.open(owner: renamed, limit: limit, margin: configuration.lease.milliseconds / 2)
        }
    }

    private var leaseMS: Int64 { configuration.lease.milliseconds }

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
        handoff.open(owner: directOwner.name.withLock { $0 }, limit: 16 * concurrency, margin: leaseMS / 2)
        // Not children of this task: they must outlive its cancellation until the sends have finished.
        let keeper = Task { await keepLeases() }
        let reporting = Task { await reporter.run() }
        let watcher = Task { await watchPauses() }
        var ready: [Message] = []
        await withTaskGroup(of: Event.self) { group in
            var running = 0
            var waiting = false
            var failures = 0
            let clock = ContinuousClock()
            var nextClaim = clock.now
            var lastClaim = clock.now - configuration.pollInterval
            while !Task.isCancelled {
                let direct = handoff.take(.max)
                if !direct.isEmpty {
                    ready += direct.filter(hold(direct:))
                    metrics.handedOver(direct.count)
                }
                let paused = gate.pause() != nil
                handoff.setPaused(paused)
                if !paused {
                    while running < concurrency, !ready.isEmpty {
                        let message = ready.removeFirst()
                        running += 1
                        group.addTask { await self.relay(message); return .sent }
                    }
                }
                // Claims fill what memory does not: when slots are free and a poll is due or a message was
                // stored without a lease.
                var claimedFull = false
                if !paused, ready.count < concurrency, running < concurrency, clock.now >= nextClaim {
                    let limit = 4 * concurrency - running - ready.count
                    lastClaim = clock.now
                    do {
                        let holding = held.state.withLock { Array($0.keys) }
                        if let batch = try await outbox.claim(owner: owner, now: now(), leaseMS: leaseMS, limit: limit,
                                                              excluding: holding) {
                            metrics.claimed(batch.messages.count)
                            ready += batch.messages.filter { hold(claimed: $0, lease: RelayLease(owner: batch.lease, until: batch.leaseUntil)) }
                            claimedFull = batch.messages.count >= limit
                        }
                        failures = 0
                        // A full claim suggests more are due: claim again as soon as there is room.
                        nextClaim = claimedFull ? clock.now : clock.now + configuration.pollInterval
                    } catch {
                        failures += 1
                        if failures == 1 { logger.warning("claiming from the outbox failed", metadata: ["error": "\(error)"]) }
                        nextClaim = clock.now + min(configuration.pollInterval * (1 << min(failures, 5)), .seconds(10))
                    }
                    if !ready.isEmpty && running < concurrency || claimedFull { continue }
                }
                handoff.setBacklog(ready.count + running)
                if !waiting {
                    waiting = true
                    // With no room to claim, the next finished send wakes the loop anyway.
                    let roomToClaim = ready.count < concurrency && running < concurrency
                    let untilClaim = roomToClaim ? nextClaim - clock.now : configuration.pollInterval
                    let timeout = max(gate.pause() ?? untilClaim, .milliseconds(1))
                    group.addTask { .woke(notified: await self.handoff.wait(timeout: timeout)) }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .sent:
                    running -= 1
                case .woke(let notified):
                    waiting = false
                    // A message stored without a lease: claim it soon (not more than 20 times a second however
                    // many are stored so). A wake-up for messages in memory costs the database nothing.
                    if notified, handoff.takeStoredWithoutLease() {
                        nextClaim = min(nextClaim, max(clock.now, lastClaim + .milliseconds(50)))
                    }
                }
            }
            // Shutting down: sends under way finish (those waiting for FCM to recover give up).
            while running > 0, let event = await group.next() {
                if case .sent = event { running -= 1 }
            }
        }
        // What was not started goes back to the database for any worker, at once.
        for message in handoff.close() {
            if hold(direct: message) { ready.append(message) }
        }
        for message in ready {
            if let lease = lease(of: message.id) { recorder.record(.release(id: message.id, lease: lease.owner)) }
        }
        await recorder.drain()
        keeper.cancel()
        watcher.cancel()
        reporting.cancel()
        await keeper.value
        await watcher.value
        await reporting.value
        // Not cancelled with this task: the last report must land.
        await Task { [reporter] in await reporter.finish() }.value
        logger.info("relay worker stopped", metadata: ["owner": "\(owner)"])
    }

    // MARK: Leases

    /// Takes a message handed over in memory; false when it is held already.
    private func hold(direct message: Message) -> Bool {
        guard let direct = RelayState(message: message.document)?.direct else { return false }
        return held.hold(message.id, direct: direct)
    }

    /// Takes a claimed message; false when this worker holds it already (its lease moves to the claim's).
    private func hold(claimed message: Message, lease: RelayLease) -> Bool {
        held.state.withLock { held in
            defer { held[message.id] = lease }
            return held[message.id] == nil
        }
    }

    /// Stops holding a message at once, with no write to wait for.
    private func release(_ id: ObjectID) {
        _ = held.state.withLock { $0.removeValue(forKey: id) }
    }

    /// The lease of a held message as last confirmed.
    private func lease(of id: ObjectID) -> RelayLease? {
        held.state.withLock { $0[id] }
    }

    /// The lease of a held message while it holds for at least a quarter of a lease yet, else nil: nothing is
    /// sent on a lease that may run out before FCM answers. A direct message's is its progress record's.
    private func safeLease(_ id: ObjectID) -> RelayLease? {
        let current = now()
        guard let lease = lease(of: id) else { return nil }
        let until = lease.until == HeldLeases.recordHeld ? handoff.recordUntil(owner: lease.owner) : lease.until
        return until - current >= leaseMS / 4 ? lease : nil
    }

    /// Every quarter of a lease, moves on in one command the leases of the held messages that have less than
    /// five eighths of theirs left: a message sent and recorded within a couple of seconds is never renewed.
    private func keepLeases() async {
        let interval = max(configuration.lease / 4, .milliseconds(100))
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            let current = now()
            // A message whose last write is queued is renewed only when that write is late: it usually lands
            // well within the lease, and renewing it would be a write more for the same message.
            let finishing = held.finishing.withLock { $0 }
            let due = held.state.withLock { held in
                held.filter { $0.value.until - current < leaseMS * (finishing.contains($0.key) ? 3 : 5) / 8 }
            }
            guard !due.isEmpty else { continue }
            let ids = Array(due.keys)
            let leases = Set(due.values.map(\.owner))
            let until = current + leaseMS
            do {
                let moved = try await outbox.renew(ids, leases: leases, until: until)
                metrics.renewed()
                let kept = moved == ids.count ? Set(ids) : try await outbox.stillHeld(ids, leases: leases)
                let lost = held.state.withLock { held -> Int in
                    var lost = 0
                    for (id, lease) in due where held[id]?.owner == lease.owner {
                        if kept.contains(id) {
                            held[id]?.until = until
                        } else {
                            // Written meanwhile (the recorder lets it go), or taken over: send nothing more.
                            held[id]?.until = 0
                            lost += 1
                        }
                    }
                    return lost
                }
                if lost > 0 { metrics.lost(lost) }
            } catch {
                logger.warning("renewing relay leases failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Pauses

    /// Reads the pause other replicas stored for the project, every poll interval (less often while the
    /// database fails, so as not to hold its threads).
    private func watchPauses() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                if let until = try await pauses.until(project: configuration.project) { gate.pausedElsewhere(until: until) }
                failures = 0
            } catch {
                failures += 1
            }
            let interval = min(configuration.pollInterval * (1 << min(failures, 5)), .seconds(10))
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// Tells the other replicas that FCM asked to pause until `until`, unless this worker told them already.
    private func share(pause until: Int64, reason: FCMError) {
        let isNew = sharedPause.withLock { shared in
            defer { shared = max(shared, until) }
            return until > shared + 250
        }
        guard isNew else { return }
        metrics.paused()
        logger.warning("FCM asked to slow down: the relay to the project pauses",
                       metadata: ["project": "\(configuration.project)", "until_ms": "\(until)", "error": "\(reason)"])
        Task {
            do {
                try await pauses.pause(project: configuration.project, until: until, reason: reason.description,
                                       by: owner, now: now())
            } catch {
                logger.warning("storing a relay pause failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Sending

    /// Sends a held message's unsent components in order, recording each result as FCM gives it, then where
    /// the message goes next. Stops without sending more when its lease is in doubt or the worker stops.
    func relay(_ message: Message) async {
        let id = message.id
        let stored = RelayState(message: message.document)
        // A direct message's writes wait for its outcome: when every component reached FCM, none is made.
        var direct = stored?.direct
        var withheld: RelayUpdate?
        func record(_ update: (String) -> RelayUpdate) {
            guard let lease = lease(of: id) else { return }
            let write = update(lease.owner)
            guard direct != nil, !write.endsLease else {
                if var withheld { withheld.merge(write); recorder.record(withheld) } else { recorder.record(write) }
                withheld = nil
                return
            }
            if withheld == nil { withheld = write } else { withheld?.merge(write) }
        }
        func finish(_ outcome: RelayOutcome) {
            metrics.finished(outcome.status)
            if let sent = direct, outcome.status == .sent, outcome.lastError == nil {
                direct = nil
                if let owner = held.release(id, direct: sent) { handoff.done([sent.seq], owner: owner) }
                reporter.changed()
                return
            }
            held.finishing.withLock { _ = $0.insert(id) }
            record { outcome.update(lease: $0, now: now()) }
        }
        guard let state = stored,
              let distribution = RelayMessage.Distribution(rawValue: message.distribution) else {
            return finish(RelayOutcome(id: id, status: .failed, lastError: "the message has no relay state or distribution"))
        }
        let relayMessage = RelayMessage(
            msiKey: message.msiKey.hex, topicKey: message.topicKey, distribution: distribution,
            title: message.title, desc: message.desc, message: message.message, timestamp: message.timestamp,
            ttlSeconds: state.ttlSeconds, expiresAt: state.expiresAt)
        if relayMessage.isExpired(at: now()) {
            return finish(RelayOutcome(id: id, status: .expired, lastError: "the ttl ran out before the message was sent"))
        }
        let unsent = Set(state.unsent)
        let requests = FCMMapping.requests(for: relayMessage, options: mapping).compactMap { request in
            RelayComponent(rawValue: request.component.rawValue).flatMap { unsent.contains($0) ? (request, $0) : nil }
        }
        var retryable: FCMError?
        var permanent: FCMError?
        var answered = 0
        for (request, component) in requests {
            if Task.isCancelled { break }
            guard let ticket = await gate.admit() else {
                // Stopping while FCM asks to wait: hand the message back.
                return record { .release(id: id, lease: $0) }
            }
            guard safeLease(id) != nil else {
                gate.abandon(ticket)
                if let direct, let owner = held.release(id, direct: direct) {
                    // The record may hold on after all: the message goes back to the outbox.
                    handoff.unsettled(DirectRelay(owner: owner, seq: direct.seq))
                } else {
                    release(id)  // another worker holds it, or will before FCM could answer
                }
                return
            }
            if ticket.probe { metrics.probed() }
            do {
                let name = try await sender.send(request)
                gate.succeeded(ticket)
                metrics.sent(component)
                record { RelayUpdate(id: id, lease: $0, component: component, result: .sent(name: name), at: now()) }
            } catch {
                let fcmError = error as? FCMError ?? FCMError(code: .other, message: "\(error)", isRetryable: true)
                if let until = gate.failed(ticket, error: fcmError) { share(pause: until, reason: fcmError) }
                metrics.failed(component, retryable: fcmError.isRetryable)
                record {
                    RelayUpdate(id: id, lease: $0, component: component,
                                result: .failed(error: fcmError.description, permanent: !fcmError.isRetryable), at: now())
                }
                if fcmError.isRetryable {
                    // The rest waits for the retry, so the components keep their order.
                    retryable = fcmError
                    break
                }
                permanent = fcmError
            }
            answered += 1
        }
        if let retryable {
            return finish(retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: retryable))
        }
        if answered < requests.count {
            // Stopped before the last component: what was sent is on record; the rest is for any worker.
            return record { .release(id: id, lease: $0) }
        }
        let failedBefore = state.components.values.contains { $0.failed }
        if let permanent {
            logger.warning("FCM refused a message", metadata: ["msi_key": "\(message.msiKey)", "error": "\(permanent)"])
        }
        let failed = permanent != nil || failedBefore
        finish(RelayOutcome(id: id, status: failed ? .failed : .sent, lastError: permanent?.description))
    }

    private func retryOutcome(_ message: Message, state: RelayState, expiry: Int64?, error: FCMError) -> RelayOutcome {
        let current = now()
        var delay = configuration.retry.delay(afterAttempt: state.attempts, error: error)
        // Not before the project's pause is over.
        if let pause = gate.pause() { delay = max(delay, pause) }
        let retryAt = current + delay.milliseconds
        if retryAt > state.deadlineAt {
            logger.warning("giving up on a message after its retry deadline",
                           metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return RelayOutcome(id: message.id, status: .failed, lastError: "retry deadline passed: \(error)")
        }
        if let expiry, retryAt > expiry {
            return RelayOutcome(id: message.id, status: .expired,
                                lastError: "the ttl runs out before the next attempt: \(error)")
        }
        metrics.retried()
        return RelayOutcome(id: message.id, status: .pending, retryAt: retryAt, lastError: error.description)
    }
}

/// The name of the progress record a worker's new messages go under.
final class RecordName: Sendable {
    let name: Mutex<String>

    init(_ name: String) {
        self.name = Mutex(name)
    }
}

/// The messages a worker holds and their leases, shared with its recorder.
final class HeldLeases: Sendable {
    /// The `until` of a direct message's lease: it holds while its progress record does.
    static let recordHeld = Int64.max

    let state = Mutex<[ObjectID: RelayLease]>([:])
    /// Those whose outcome is written and not yet acknowledged.
    let finishing = Mutex<Set<ObjectID>>([])
    /// The direct messages among them, and their number.
    private let direct = Mutex<[ObjectID: DirectRelay]>([:])

    /// Holds a direct message; false when it is held already.
    func hold(_ id: ObjectID, direct relay: DirectRelay) -> Bool {
        let held = state.withLock { held in
            guard held[id] == nil else { return false }
            held[id] = RelayLease(owner: relay.owner, until: Self.recordHeld)
            return true
        }
        if held { direct.withLock { $0[id] = relay } }
        return held
    }

    /// Lets go of messages whose lease a write ended; returns the numbers of the direct ones, by record.
    func release(_ ids: [ObjectID]) -> [String: [Int64]] {
        state.withLock { held in for id in ids { held.removeValue(forKey: id) } }
        finishing.withLock { finishing in for id in ids { finishing.remove(id) } }
        var seqs: [String: [Int64]] = [:]
        direct.withLock { direct in
            for id in ids {
                if let relay = direct.removeValue(forKey: id) { seqs[relay.owner, default: []].append(relay.seq) }
            }
        }
        return seqs
    }

    /// Lets go of the direct message `id` with no write; returns its record's name, or nil when it was not held.
    func release(_ id: ObjectID, direct relay: DirectRelay) -> String? {
        guard direct.withLock({ $0.removeValue(forKey: id) }) == relay else { return nil }
        state.withLock { _ = $0.removeValue(forKey: id) }
        return relay.owner
    }

    /// Lets go of every direct message of the record `owner`, which another worker took over.
    func forget(directOf owner: String) {
        let ids = direct.withLock { direct -> [ObjectID] in
            let ids = direct.filter { $0.value.owner == owner }.map(\.key)
            for id in ids { direct.removeValue(forKey: id) }
            return ids
        }
        state.withLock { held in for id in ids { held.removeValue(forKey: id) } }
    }
}

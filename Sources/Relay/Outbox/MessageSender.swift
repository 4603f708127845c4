import DAO
import FCM
import Logging
import Mongo

/// Sends a message its worker holds: each unsent component in order through the gate, each answer sorted by the
/// `OutcomeClassifier` and recorded as FCM gives it, then where the message goes next (sent, failed, expired, or
/// pending for a retry). Stops without sending more when its lease is in doubt or the worker stops. A message to
/// persons and groups is handed to the fan-out (`FanOutSender`) in place of the components.
struct MessageSender: Sendable {
    /// The transport: one request body at a time.
    let sender: any FCMSending
    /// Where a message is read again after an edit.
    let outbox: OutboxDAO
    let mapping: FCMMappingOptions
    /// Backoff for what FCM could not take yet, per message.
    let retry: RetryPolicy
    /// Back-pressure: every send passes it, and its answer is reported to it (through `classifier`).
    let gate: RelayGate
    let classifier: OutcomeClassifier
    /// The worker's messages and their leases: nothing is sent on a lease in doubt.
    let held: HeldMessages
    /// Told when a direct message is done with, or must go back to the outbox.
    let handoff: OutboxHandoff
    /// Writes the components' results and the outcomes, together with other messages'.
    let recorder: OutcomeRecorder
    /// Told when a direct message was sent with no write: its progress record moves on.
    let reporter: ProgressReporter
    /// Told the pauses FCM asked for, for the other replicas.
    let pauses: SharedPause
    let metrics: RelayMetrics, logger: Logger
    let now: UnixClock
    /// Sends a message to persons and groups device by device in place of the components; nil: such a message fails.
    let fanOut: FanOutSender?
    /// Leaves the devices in their quiet hours out of a passive or active topic message (and schedules their token
    /// sends); nil: every topic message goes to the whole topic.
    var quiet: QuietTopicHold? = nil
    /// Told each message's final outcome, in order (`MessageFinishing`): the acknowledgement's audience, the
    /// webhook events.
    var observers: [any MessageFinishing] = []

    /// Sends a held message's unsent components in order, recording each result as FCM gives it, then where
    /// the message goes next.
    ///
    /// A correction or withdrawal stored meanwhile (`EditWatch`) stops it between two requests: what was sent is
    /// written, the message read again, and the attempt goes on as it now is: first the notices to what the message
    /// reached, then the rest of it (corrected), or nothing more of it once withdrawn (its components `skipped`). The
    /// outcome holds only for the edit last read (`RelayOutcome.edit`), so a notice stored after that last look is
    /// never left pending on a message marked sent.
    func send(_ message: Message) async {
        let id = message.id
        let stored = RelayState(message: message.document)
        // A direct message's writes wait for its outcome: when every component reached FCM, none is made.
        var direct = stored?.direct
        var withheld: RelayUpdate?
        let watch = held.watch(id, seen: stored?.edit ?? 0)
        defer { held.unwatch(id) }
        // Withdrawn as the attempt last read it: no webhook event nor acknowledgement follows its outcome.
        var withdrawn = message.document["withdrawn"] != nil
        func record(_ update: (String) -> RelayUpdate) {
            guard let lease = held.lease(of: id) else { return }
            let write = update(lease.owner)
            guard direct != nil, !write.endsLease else {
                if var withheld { withheld.merge(write); recorder.record(withheld) } else { recorder.record(write) }
                withheld = nil
                return
            }
            if withheld == nil { withheld = write } else { withheld?.merge(write) }
        }
        func finish(_ outcome: RelayOutcome) async {
            var outcome = outcome
            outcome.edit = watch.seen
            metrics.finished(outcome.status)
            if !withdrawn {
                // Before the outcome is on record: a crash between the two sends the message again, and tells them
                // again too.
                for observer in observers { await observer.finished(message, outcome: outcome) }
            }
            if let sent = direct, outcome.status == .sent, outcome.lastError == nil {
                direct = nil
                if let owner = held.release(id, direct: sent) { handoff.done([sent.seq], owner: owner) }
                reporter.changed()
                return
            }
            held.finishing(id)
            record { outcome.update(lease: $0, now: now()) }
        }
        /// Lets go of the message at once when its lease is in doubt, with no write.
        func letGo() {
            if let sent = direct, let owner = held.release(id, direct: sent) {
                // The record may hold on after all: the message goes back to the outbox.
                handoff.unsettled(DirectRelay(owner: owner, seq: sent.seq))
            } else {
                held.release(id)  // another worker holds it, or will before FCM could answer
            }
        }
        // This worker took a direct message of its own over from its record after an edit (`reread`).
        var tookOver = false
        /// Reads the message again after an edit, once what was sent is written: a direct message the edit handed to
        /// the outbox is held under the lease it was given (its outcomes written from now on). Nil when the message
        /// is no longer this worker's to send (it let go of it).
        func reread() async -> Message? {
            if let write = withheld {
                withheld = nil
                recorder.record(write)
            }
            await recorder.drain()
            let fresh: Message?
            do {
                fresh = try await outbox.message(id)
            } catch {
                logger.warning("reading an edited message failed", metadata: ["error": "\(error)"])
                fresh = nil
            }
            guard let fresh, let state = RelayState(message: fresh.document) else {
                // Unknown: its lease runs out and a worker that can read it goes on.
                if let sent = direct, let owner = held.release(id, direct: sent) {
                    handoff.unsettled(DirectRelay(owner: owner, seq: sent.seq))
                } else {
                    held.release(id)
                }
                return nil
            }
            if let sent = direct, state.status != .direct {
                guard let lease = state.lease, lease.owner == sent.owner,
                    let owner = held.takeOver(id, from: sent, lease: lease)
                else {
                    _ = held.release(id, direct: sent)  // another worker has it
                    return nil
                }
                direct = nil
                tookOver = true
                handoff.done([sent.seq], owner: owner)
                reporter.changed()
            } else if direct == nil, state.lease?.owner != held.lease(of: id)?.owner {
                held.release(id)  // another worker has it
                return nil
            }
            watch.saw(state.edit)
            return fresh
        }
        var current = message
        attempts: while true {
            if watch.isChanged {
                guard let fresh = await reread() else { return }
                current = fresh
            }
            let message = current
            guard let state = RelayState(message: message.document),
                let relayMessage = RelayMessage(stored: message, now: now())
            else {
                return await finish(
                    RelayOutcome(id: id, status: .failed, lastError: "the message has no relay state or distribution"))
            }
            // What is done with already: on record, or settled here in this attempt (written behind).
            var settled = Set(state.order.filter(state.isDone))
            func settle(_ components: [RelayComponent], _ result: RelayOutcome.ComponentResult) {
                guard !components.isEmpty else { return }
                settled.formUnion(components)
                record { lease in
                    var update = RelayUpdate(id: id, lease: lease, component: components[0], result: result, at: now())
                    for component in components.dropFirst() {
                        update.merge(RelayUpdate(id: id, lease: lease, component: component, result: result, at: now()))
                    }
                    return update
                }
            }
            // A direct message an edit handed to the outbox, claimed here: its process sent it without a write.
            var reached = state.order.contains { !$0.isNotice && state.components[$0]?.sent == true }
            if state.handedOverByEdit && !tookOver {
                settle(state.unsent.filter { !$0.isNotice }, .sent(name: "direct"))
                reached = true
            }
            // Withdrawn: nothing more of it goes out.
            withdrawn = message.document["withdrawn"] != nil
            if withdrawn { settle(state.unsent.filter { !$0.isNotice && !settled.contains($0) }, .skipped) }
            // Its corrections and withdrawal, to what the message reached (`sendNotices`).
            let notices = state.unsent.filter(\.isNotice)
            var refusal: FCMError?
            if !notices.isEmpty {
                switch await sendNotices(
                    notices, of: message, as: relayMessage, state: state, reached: reached,
                    watch: watch, record: record)
                {
                case .sent(let refused):
                    settled.formUnion(notices)
                    refusal = refused
                case .edited:
                    continue attempts
                case .ended:
                    return
                }
            }
            let failedBefore = state.components.values.contains { $0.failed }
            if state.order.allSatisfy(settled.contains) {
                // Nothing of the message itself is left to send (a notice of a message sent, or one withdrawn).
                if watch.isChanged { continue attempts }
                return await finish(
                    RelayOutcome(
                        id: id, status: failedBefore || refusal != nil ? .failed : .sent,
                        lastError: refusal?.description))
            }
            if relayMessage.isExpired(at: now()) {
                return await finish(
                    RelayOutcome(id: id, status: .expired, lastError: "the ttl ran out before the message was sent"))
            }
            if let audience = FanOutResolver.FanOutAudience(of: message) {
                if await sendToDevices(
                    message, audience: audience, as: relayMessage, state: state, watch: watch,
                    fresh: direct != nil, finish: finish, record: record, lost: letGo)
                {
                    continue attempts
                }
                return
            }
            let heldTopic = await quiet?.heldTopic(relayMessage)
            let excluded = await quiet?.excludedTopics(relayMessage, stored: message, held: heldTopic) ?? []
            // The languages an earlier attempt sent in requests of their own keep them: the main text's request of this
            // attempt leaves their devices out, as the first one did or will.
            let mapped = FCMMapping.requests(
                for: relayMessage, options: mapping, excluding: excluded,
                sentSeparately: state.languagesSentSeparately, held: heldTopic
            ).compactMap { request in
                RelayComponent(rawValue: request.component.rawValue).map { (request, $0) }
            }
            // A component not on record is sent too: nothing the mapping makes is left out unnoticed.
            let requests = mapped.filter { !settled.contains($0.1) }
            // The languages of a translated Alert past this attempt's condition budget go with the main text: their
            // components are recorded with its answer.
            let separate = Set(mapped.map(\.1))
            let withDefault = state.unsent.filter { $0.language != nil && !separate.contains($0) }
            var retryable: FCMError?
            var permanent = refusal
            var answered = 0
            components: for (request, component) in requests {
                if Task.isCancelled { break }
                // Edited: the rest goes as the message now is (or not at all).
                if watch.isChanged { continue attempts }
                switch await sendComponent(request, as: component, of: id, record: record) {
                case .sent(let name):
                    record { lease in
                        var update = RelayUpdate(
                            id: id, lease: lease, component: component, result: .sent(name: name),
                            at: now())
                        if component == .defaultLanguage {
                            for language in withDefault {
                                update.merge(
                                    RelayUpdate(
                                        id: id, lease: lease, component: language,
                                        result: .sent(name: name), at: now()))
                            }
                        }
                        return update
                    }
                case .retry(let error):
                    // The rest waits for the retry, so the components keep their order.
                    retryable = error
                    break components
                case .refused(let error):
                    permanent = error
                case .stopping:
                    // Stopping while FCM asks to wait: hand the message back.
                    return record { .release(id: id, lease: $0) }
                case .leaseLost:
                    return letGo()
                }
                answered += 1
            }
            if let retryable {
                return await finish(
                    retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: retryable))
            }
            if answered < requests.count {
                // Stopped before the last component: what was sent is on record; the rest is for any worker.
                return record { .release(id: id, lease: $0) }
            }
            // Edited while the last one went: its notice goes to it too.
            if watch.isChanged { continue attempts }
            if let permanent {
                logger.warning(
                    "FCM refused a message", metadata: ["msi_key": "\(message.msiKey)", "error": "\(permanent)"])
            }
            let failed = permanent != nil || failedBefore
            return await finish(
                RelayOutcome(id: id, status: failed ? .failed : .sent, lastError: permanent?.description))
        }
    }

    /// Sends a message to persons and groups, or a topic's sample, through the fan-out, then records where it goes: sent once every
    /// device has an answer (the component names where they are: its deliveries), pending for a retry when FCM asked
    /// to wait, expired, or handed back when the worker stops. True when it stopped for an edit (`watch`): the
    /// caller reads the message again and goes on. `fresh`: sent from memory by the process that stored it, on its
    /// first attempt; `lost` lets go of the message when its lease is in doubt.
    private func sendToDevices(
        _ message: Message, audience: FanOutResolver.FanOutAudience, as relayMessage: RelayMessage,
        state: RelayState, watch: EditWatch, fresh: Bool, finish: (RelayOutcome) async -> Void,
        record: ((String) -> RelayUpdate) -> Void, lost: () -> Void
    ) async -> Bool {
        let id = message.id
        guard let fanOut else {
            await finish(RelayOutcome(id: id, status: .failed, lastError: "this relay sends no messages to persons"))
            return false
        }
        switch await fanOut.send(message, audience: audience, as: relayMessage, watch: watch, fresh: fresh) {
        case .finished:
            // Edited while the last requests went: their devices are told too.
            if watch.isChanged { return true }
            await finish(RelayOutcome(id: id, status: .sent, components: [.devices: .sent(name: "deliveries")]))
        case .edited:
            return true
        case .retry(let error):
            await finish(retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: error))
        case .expired:
            await finish(
                RelayOutcome(id: id, status: .expired, lastError: "the ttl ran out before every device was sent to"))
        case .stopped:
            record { .release(id: id, lease: $0) }
        case .lost:
            lost()
        }
        return false
    }

    /// Where a message FCM could not take yet goes: pending until its next attempt, or failed or expired when
    /// that would come after its retry deadline or its ttl.
    func retryOutcome(_ message: Message, state: RelayState, expiry: Int64?, error: FCMError) -> RelayOutcome {
        let current = now()
        var delay = retry.delay(afterAttempt: state.attempts, error: error)
        // Not before the project's pause is over.
        if let pause = gate.pause() { delay = max(delay, pause) }
        let retryAt = current + delay.milliseconds
        if retryAt > state.deadlineAt {
            logger.warning(
                "giving up on a message after its retry deadline",
                metadata: ["msi_key": "\(message.msiKey)", "error": "\(error)"])
            return RelayOutcome(id: message.id, status: .failed, lastError: "retry deadline passed: \(error)")
        }
        if let expiry, retryAt > expiry {
            return RelayOutcome(
                id: message.id, status: .expired,
                lastError: "the ttl runs out before the next attempt: \(error)")
        }
        metrics.retried()
        return RelayOutcome(id: message.id, status: .pending, retryAt: retryAt, lastError: error.description)
    }
}

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
    /// Emits `message.sent` and `message.failed` to the webhooks subscribed; nil: no webhook events.
    var events: MessageEvents? = nil
    /// Fixes the audience of a message that asked for an acknowledgement once it is sent; nil: no escalation.
    var acknowledgements: AckAudience? = nil

    /// Sends a held message's unsent components in order, recording each result as FCM gives it, then where
    /// the message goes next.
    func send(_ message: Message) async {
        let id = message.id
        let stored = RelayState(message: message.document)
        // A direct message's writes wait for its outcome: when every component reached FCM, none is made.
        var direct = stored?.direct
        var withheld: RelayUpdate?
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
            metrics.finished(outcome.status)
            // Before the outcome is on record, as the event: a crash between the two fixes nothing twice.
            if outcome.status == .sent { await acknowledgements?.fix(message) }
            // Before the outcome is on record: a crash between the two sends the message again, and its event too.
            await events?.finished(message, outcome: outcome)
            if let sent = direct, outcome.status == .sent, outcome.lastError == nil {
                direct = nil
                if let owner = held.release(id, direct: sent) { handoff.done([sent.seq], owner: owner) }
                reporter.changed()
                return
            }
            held.finishing(id)
            record { outcome.update(lease: $0, now: now()) }
        }
        guard let state = stored, let relayMessage = RelayMessage(stored: message, now: now()) else {
            return await finish(RelayOutcome(id: id, status: .failed, lastError: "the message has no relay state or distribution"))
        }
        // A correction or withdrawal of a message sent before: that alone goes out (`sendNotices`).
        let notices = state.unsent.filter(\.isNotice)
        if !notices.isEmpty {
            return await sendNotices(notices, of: message, as: relayMessage, state: state, record: record)
        }
        if relayMessage.isExpired(at: now()) {
            return await finish(RelayOutcome(id: id, status: .expired, lastError: "the ttl ran out before the message was sent"))
        }
        if let audience = FanOutResolver.FanOutAudience(of: message) {
            return await sendToDevices(message, audience: audience, as: relayMessage, state: state,
                                       finish: finish, record: record)
        }
        let excluded = await quiet?.excludedTopics(relayMessage, stored: message) ?? []
        // The languages an earlier attempt sent in requests of their own keep them: the main text's request of this
        // attempt leaves their devices out, as the first one did or will.
        let mapped = FCMMapping.requests(for: relayMessage, options: mapping, excluding: excluded,
                                         sentSeparately: state.languagesSentSeparately).compactMap { request in
            RelayComponent(rawValue: request.component.rawValue).map { (request, $0) }
        }
        // A component not on record is sent too: nothing the mapping makes is left out unnoticed.
        let requests = mapped.filter { !state.isDone($0.1) }
        // The languages of a translated Alert past this attempt's condition budget go with the main text: their
        // components are recorded with its answer.
        let separate = Set(mapped.map(\.1))
        let withDefault = state.unsent.filter { $0.language != nil && !separate.contains($0) }
        var retryable: FCMError?
        var permanent: FCMError?
        var answered = 0
        components: for (request, component) in requests {
            if Task.isCancelled { break }
            switch await sendComponent(request, as: component, of: id, record: record) {
            case .sent(let name):
                record { lease in
                    var update = RelayUpdate(id: id, lease: lease, component: component, result: .sent(name: name),
                                             at: now())
                    if component == .defaultLanguage {
                        for language in withDefault {
                            update.merge(RelayUpdate(id: id, lease: lease, component: language,
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
                if let direct, let owner = held.release(id, direct: direct) {
                    // The record may hold on after all: the message goes back to the outbox.
                    handoff.unsettled(DirectRelay(owner: owner, seq: direct.seq))
                } else {
                    held.release(id)  // another worker holds it, or will before FCM could answer
                }
                return
            }
            answered += 1
        }
        if let retryable {
            return await finish(retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: retryable))
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
        await finish(RelayOutcome(id: id, status: failed ? .failed : .sent, lastError: permanent?.description))
    }

    /// Sends a message to persons and groups, or a topic's sample, through the fan-out, then records where it goes: sent once every
    /// device has an answer (the component names where they are: its deliveries), pending for a retry when FCM asked
    /// to wait, expired, or handed back when the worker stops.
    private func sendToDevices(_ message: Message, audience: FanOutResolver.FanOutAudience, as relayMessage: RelayMessage,
                               state: RelayState, finish: (RelayOutcome) async -> Void,
                               record: ((String) -> RelayUpdate) -> Void) async {
        let id = message.id
        guard let fanOut else {
            return await finish(RelayOutcome(id: id, status: .failed, lastError: "this relay sends no messages to persons"))
        }
        switch await fanOut.send(message, audience: audience, as: relayMessage) {
        case .finished:
            await finish(RelayOutcome(id: id, status: .sent, components: [.devices: .sent(name: "deliveries")]))
        case .retry(let error):
            await finish(retryOutcome(message, state: state, expiry: relayMessage.effectiveExpiry, error: error))
        case .expired:
            await finish(RelayOutcome(id: id, status: .expired, lastError: "the ttl ran out before every device was sent to"))
        case .stopped:
            record { .release(id: id, lease: $0) }
        case .lost:
            held.release(id)  // another worker holds it, or will before FCM could answer
        }
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

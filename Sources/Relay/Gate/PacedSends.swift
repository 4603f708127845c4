import DAO
import FCM
import HubTime

/// One device's send as every per-device sender of a worker makes it: a permit of `FCM_SEND_RATE` (`SendPacer`, all
/// replicas together), let through the worker's gate (`RelayGate`), sent, and FCM's answer sorted by the one rule
/// (`OutcomeClassifier`), a pause FCM asked for shared with the other replicas (`SharedPause`). Built by the worker
/// from its own parts (`OutboxWorker.deviceLane`), so re-sends and the fan-out draw on one rate and one gate.
struct PacedSends: Sendable {
    /// What one send came to.
    enum Outcome: Sendable {
        case sent
        /// FCM could not take it now.
        case retryLater(FCMError)
        /// FCM asked the project to wait (429, 503 with Retry-After): the pause is shared already.
        case paused(FCMError)
        case failed(FCMError)
        case unregistered(FCMError)
        /// Not sent: the task was cancelled.
        case cancelled
    }

    let sender: any FCMSending
    let gate: RelayGate
    let classifier: OutcomeClassifier
    let pacer: SendPacer
    let pauses: SharedPause
    let metrics: RelayMetrics
    let now: UnixClock

    /// Sends `request` once a permit and the gate let it.
    func send(_ request: FCMRequest) async -> Outcome {
        guard let ticket = await admit() else { return .cancelled }
        return await send(request, with: ticket)
    }

    /// Waits for a permit of the send rate and the gate's ticket; nil once the task is cancelled. A sender that
    /// sends many at once (the fan-out) takes them one after the other, then sends each with `send(_:with:)`.
    func admit() async -> RelayGate.Ticket? {
        while !Task.isCancelled {
            guard let deadline = try? await pacer.acquire() else { return nil }
            // nil: the gate stays closed past this permit's window: a new permit after it.
            guard let ticket = await gate.admit(notAfter: deadline) else { continue }
            if now() >= deadline {
                // The permit's window is over (the gate's window was full, or the process stalled): sent now, it
                // would count in the next second, beside that second's own permits.
                gate.abandon(ticket)
                continue
            }
            return ticket
        }
        return nil
    }

    /// Gives back a ticket that `admit` gave and no request used.
    func abandon(_ ticket: RelayGate.Ticket) {
        gate.abandon(ticket)
    }

    /// Sends `request` on `ticket` (from `admit`) and sorts FCM's answer.
    func send(_ request: FCMRequest, with ticket: RelayGate.Ticket) async -> Outcome {
        if ticket.probe { metrics.probed() }
        let answer = await sender.answer(request)
        if case .failure = answer, Task.isCancelled {
            // Cut short by a stop: says nothing of FCM.
            gate.abandon(ticket)
            return .cancelled
        }
        switch classifier.classify(answer, of: ticket) {
        case .sent:
            metrics.sent(.devices)
            return .sent
        case .retryAfter(let error, let pauseEnd):
            metrics.failed(.devices, retryable: true)
            guard let pauseEnd else { return .retryLater(error) }
            pauses.share(until: pauseEnd, reason: error)
            return .paused(error)
        case .failed(let error):
            metrics.failed(.devices, retryable: false)
            return .failed(error)
        case .unregistered(let error):
            metrics.failed(.devices, retryable: false)
            return .unregistered(error)
        }
    }
}

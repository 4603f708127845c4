import DAO
import FCM

/// One device's send as every per-device sender of a worker makes it: a permit of `FCM_SEND_RATE` (`SendPacer`, all
/// replicas together), let through the worker's gate (`RelayGate`), sent, and FCM's answer sorted by the one rule
/// (`OutcomeClassifier`), a pause FCM asked for shared with the other replicas (`SharedPause`). Built by the worker
/// from its own parts (`OutboxWorker.pacedSends`), so re-sends and the fan-out draw on one rate and one gate.
struct PacedSends: Sendable {
    /// What one send came to.
    enum Outcome: Sendable {
        case sent
        /// FCM could not take it now (a pause, when FCM asked for one, is shared already).
        case retryLater(FCMError)
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

    /// Sends `request` once a permit and the gate let it.
    func send(_ request: FCMRequest) async -> Outcome {
        var ticket: RelayGate.Ticket?
        while ticket == nil {
            if Task.isCancelled { return .cancelled }
            guard let deadline = try? await pacer.acquire() else { return .cancelled }
            // nil: the gate stays closed past this permit's window: a new permit after it.
            ticket = await gate.admit(notAfter: deadline)
        }
        guard let ticket else { return .cancelled }
        if ticket.probe { metrics.probed() }
        let answer: Result<String, FCMError>
        do {
            answer = .success(try await sender.send(request))
        } catch {
            answer = .failure(error as? FCMError ?? FCMError(code: .other, message: "\(error)", isRetryable: true))
        }
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
            if let pauseEnd { pauses.share(until: pauseEnd, reason: error) }
            return .retryLater(error)
        case .failed(let error):
            metrics.failed(.devices, retryable: false)
            return .failed(error)
        case .unregistered(let error):
            metrics.failed(.devices, retryable: false)
            return .unregistered(error)
        }
    }
}

import FCM

/// Sorts FCM's answer to a call its gate let through into a `CallOutcome` (sent, retry after, failed,
/// unregistered) and tells the gate what became of the call, so that every caller (the outbox's sends, the
/// subscription calls) reads FCM's answers by one rule and keeps the back-pressure of its project current.
///
/// The rule: a registration gone is `unregistered` whatever else it says; an error FCM says is worth retrying,
/// or one that paused the project (always worth retrying), is `retryAfter`; any other is `failed`.
struct OutcomeClassifier: Sendable {
    /// The gate the calls came through.
    let gate: RelayGate

    /// The outcome of the call of `ticket`, which FCM answered with `result`.
    func classify<Value: Sendable>(_ result: Result<Value, FCMError>, of ticket: RelayGate.Ticket) -> CallOutcome<Value>
    {
        switch result {
        case .success(let value):
            gate.succeeded(ticket)
            return .sent(value)
        case .failure(let error):
            let pauseEnd = gate.failed(ticket, error: error)
            if error.code == .unregistered { return .unregistered(error) }
            if error.isRetryable || pauseEnd != nil { return .retryAfter(error, pauseEnd: pauseEnd) }
            return .failed(error)
        }
    }
}

import FCM
import HubTime
import Synchronization

/// Back-pressure on one FCM API of one project: every call of this process to it passes the gate first (the
/// outbox's sends through one gate, the reconciler's topic subscription calls through another: FCM limits them
/// apart).
///
/// A 503, a 429 or a time-out (FCM overloaded or unreachable) closes the gate for the whole project until
/// `Retry-After`, or for an exponential backoff when FCM names no time; a pause other replicas
/// stored (`relay_pause`) closes it too. When the pause is over, one call goes alone as a probe; if FCM
/// takes it, the calls allowed in flight come back gradually (one more for each call FCM takes, so the
/// window doubles every round trip) up to the caller's concurrency; if not, the gate closes again, longer.
final class RelayGate: Sendable {
    /// A send let through, to report its result with.
    struct Ticket: Sendable {
        /// The pause count when it was let through: only failures of sends made since the last pause lengthen
        /// the backoff (the sends already at FCM when a 503 came back fail too, and say nothing new).
        fileprivate let epoch: Int
        let probe: Bool
    }

    private struct State {
        /// No sends before this (Unix ms).
        var until: Int64 = 0
        /// After a pause: one send alone, until FCM answers it.
        var probing = false
        var probeInFlight = false
        /// Sends allowed in flight now.
        var window: Int
        var inFlight = 0
        /// Pauses in a row with no send taken since: the backoff's exponent.
        var failures = 0
        var epoch = 0
        /// Counts finished sends, so a waiter that registers late sees it missed one.
        var changes = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    /// Sends in flight at most, when FCM is well.
    let concurrency: Int
    /// The pause after the first failure without `Retry-After`, doubling with each failed probe up to
    /// `maximumBackoff`.
    let backoff: Duration
    let maximumBackoff: Duration
    private let state: Mutex<State>
    private let now: UnixClock

    init(
        concurrency: Int, backoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(15),
        now: @escaping UnixClock
    ) {
        self.concurrency = max(concurrency, 1)
        self.backoff = backoff
        self.maximumBackoff = maximumBackoff
        self.state = Mutex(State(window: max(concurrency, 1)))
        self.now = now
    }

    /// Whether FCM errors of this kind pause the whole project rather than one message.
    static func pauses(for error: FCMError) -> Bool {
        [.unavailable, .quotaExceeded, .timeout, .connectionFailed].contains(error.code)
    }

    /// The rest of the current pause, or nil when sends may go (perhaps as a probe).
    func pause() -> Duration? {
        let remaining = state.withLock { $0.until } - now()
        return remaining > 0 ? .milliseconds(remaining) : nil
    }

    /// Waits until a send may go and lets it through; nil when the task was cancelled meanwhile, or when the
    /// gate stays closed past `notAfter` (Unix ms; a call due within a rate window gives up rather than wait).
    func admit(notAfter: Int64? = nil) async -> Ticket? {
        enum Decision { case go(Ticket), sleep(Duration), waitForChange(after: Int) }
        while !Task.isCancelled {
            let current = now()
            let decision = state.withLock { state -> Decision in
                if current < state.until { return .sleep(.milliseconds(state.until - current)) }
                if state.probing {
                    guard !state.probeInFlight else { return .waitForChange(after: state.changes) }
                    state.probeInFlight = true
                    state.inFlight += 1
                    return .go(Ticket(epoch: state.epoch, probe: true))
                }
                guard state.inFlight < state.window else { return .waitForChange(after: state.changes) }
                state.inFlight += 1
                return .go(Ticket(epoch: state.epoch, probe: false))
            }
            switch decision {
            case .go(let ticket):
                return ticket
            case .sleep(let duration):
                if let notAfter, current + duration.milliseconds > notAfter { return nil }
                try? await Task.sleep(for: duration)
            case .waitForChange(let seen):
                await waitForChange(after: seen)
            }
        }
        return nil
    }

    /// FCM took the send of `ticket`: after a probe, sends start again one at a time; each send taken
    /// widens the window by one.
    func succeeded(_ ticket: Ticket) {
        finish(ticket) { state in
            if ticket.probe {
                state.probing = false
                state.window = 1
            } else {
                state.window = min(state.window + 1, concurrency)
            }
            state.failures = 0
        }
    }

    /// The send of `ticket` failed with `error`; returns the end of the pause (Unix ms) it started or
    /// lengthened, for the other replicas, or nil when the error does not pause the project.
    @discardableResult
    func failed(_ ticket: Ticket, error: FCMError) -> Int64? {
        guard Self.pauses(for: error) else {
            finish(ticket) { state in if ticket.probe { state.probing = false; state.window = 1 } }
            return nil
        }
        let current = now()
        var until: Int64 = 0
        finish(ticket) { state in
            if ticket.epoch == state.epoch {
                state.failures += 1
                state.epoch += 1
            }
            // FCM's Retry-After when it gives one, else a backoff that doubles with each failed probe.
            let exponent = min(max(state.failures - 1, 0), 20)
            let wait = error.retryAfter ?? min(backoff * (1 << exponent), maximumBackoff)
            state.until = max(state.until, current + wait.milliseconds)
            state.probing = true
            state.window = 1
            until = state.until
        }
        return until
    }

    /// A send let through was not made after all (the message's lease ran out, shutdown).
    func abandon(_ ticket: Ticket) {
        finish(ticket) { _ in }
    }

    /// Another replica paused the project until `until` (Unix ms): no sends here before then either, and a
    /// probe after.
    func pausedElsewhere(until: Int64) {
        guard until > now() else { return }
        state.withLock { state in
            guard until > state.until else { return }
            state.until = until
            state.probing = true
            state.window = 1
        }
    }

    private func finish(_ ticket: Ticket, _ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            state.inFlight -= 1
            state.changes += 1
            if ticket.probe { state.probeInFlight = false }
            change(&state)
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a send has finished since `seen` was read (or at once when cancelled).
    private func waitForChange(after seen: Int) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || state.changes != seen { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

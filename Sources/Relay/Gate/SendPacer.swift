import DAO
import Synchronization

/// Paces the fan-out's sends at `FCM_SEND_RATE`, every replica together: permits come from the shared
/// `RateWindow` in chunks (one database write for many sends), each to be used before its grant's deadline; the
/// next chunk is taken while half of one is left, so that the sends do not wait for the database's answer.
///
/// Every concurrent fan-out of a worker draws from one pacer. Permits are spaced evenly (`PacerState.spacing`); a
/// chunk not used by its deadline is dropped, so the rate errs low, never high; what each window's permits were used
/// for is kept for the last windows (`used`), for the operator and the tests. The bookkeeping is `PacerState`; this
/// type adds the clock, the sleeps and the shared window.
final class SendPacer: Sendable {
    let window: RateWindow
    /// Permits asked of the shared window at a time.
    let chunk: Int
    private let now: UnixClock
    private let state: Mutex<PacerState>
    /// The take of the shared window under way for the callers that found no permit, if any: they all wait for it.
    private let taking = Mutex<Task<Void, any Error>?>(nil)

    /// A pacer drawing `chunk` permits at a time (at most a second's allowance) from `window`.
    init(window: RateWindow, chunk: Int, now: @escaping UnixClock) {
        self.window = window
        self.chunk = max(1, min(chunk, window.limit))
        self.now = now
        self.state = Mutex(PacerState(limit: window.limit, chunk: self.chunk))
    }

    /// Waits for a permit to send; returns the time it must be used by (Unix ms).
    /// - Throws: `CancellationError` once the task is cancelled; `DAOError` when the shared window cannot be read.
    func acquire() async throws -> Int64 {
        while true {
            try Task.checkCancellation()
            let current = now()
            let taken = state.withLock { $0.take(at: current) }
            if let taken {
                if taken.refill { Task { await refillAhead() } }
                // A sleep lasts a millisecond or more and wakes late: the bucket sleeps only once its debt reaches
                // `slack`, and wakes `cushion` early, so that a late wake-up finds the next permits due rather
                // than losing their time (permits go at most `slack` early: a few at any rate).
                let wait = taken.notBefore - current * 1_000
                if wait >= PacerState.slack { try await Task.sleep(for: .microseconds(wait - PacerState.cushion)) }
                return taken.deadline
            }
            try await takeShared()
        }
    }

    /// Takes a chunk of the shared window for every caller that found no permit, one take at a time in this process:
    /// the window counts every chunk asked for before it says what is left, so many takers at once (a hundred digests
    /// starting together) would each be told the window is spent and retry in lock-step for ever. A grant replaces an
    /// older window's leftovers.
    private func takeShared() async throws {
        let task = taking.withLock { current -> Task<Void, any Error> in
            if let current { return current }
            let task = Task { [self] in
                // Cleared under the lock it was set under: a caller arriving later starts the next take.
                defer { self.taking.withLock { $0 = nil } }
                let grant = try await self.window.take(self.chunk)
                self.state.withLock { $0.add(grant) }
            }
            current = task
            return task
        }
        try await task.value
    }

    /// Takes the next grant while the permits in hand last (at most one such take at a time; it ends within the
    /// next window, or when the database fails, when the callers take their own as before).
    private func refillAhead() async {
        let grant = try? await window.take(chunk)
        state.withLock { $0.refilled(grant) }
    }

    /// Permits used per window, by the window's end (Unix ms), for the last windows.
    var used: [Int64: Int] { state.withLock { $0.used } }
}

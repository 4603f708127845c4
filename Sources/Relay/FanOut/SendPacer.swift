import DAO
import Synchronization

/// Paces the fan-out's sends at `FCM_SEND_RATE`, every replica together: permits come from the shared
/// `RateWindow` in chunks (one database write for many sends), each to be used before its grant's deadline; the
/// next chunk is taken while half of one is left, so that the sends do not wait for the database's answer.
///
/// Every concurrent fan-out of a worker draws from one pacer. Permits are spaced evenly (`spacing`);
/// a chunk not used by its deadline is dropped, so the rate errs low, never high; what each window's permits were used for is kept for the last windows
/// (`used`), for the operator and the tests.
final class SendPacer: Sendable {
    private struct State {
        var remaining = 0
        var deadline: Int64 = 0
        var windowEnd: Int64 = 0
        /// The earliest time of the next permit (Unix µs).
        var nextAt: Int64 = 0
        /// Whether a grant is being taken ahead of need (`refillAhead`).
        var refilling = false
        /// Permits used, by the end of the window they came from (Unix ms); the last `keptWindows` windows.
        var used: [Int64: Int] = [:]

        /// Adds `grant`'s permits: to the window in use, or in place of it for a later window (an older window's
        /// leftovers are dropped). `RateWindow` hands a grant out only once its second has begun, after the deadline
        /// of the one before: a later window's grant never waits behind permits still usable.
        mutating func add(_ grant: RateWindow.Grant) {
            if grant.windowEnd == windowEnd {
                remaining += grant.count
            } else if grant.windowEnd > windowEnd {
                start(grant)
            }
        }

        private mutating func start(_ grant: RateWindow.Grant) {
            (remaining, deadline, windowEnd) = (grant.count, grant.deadline, grant.windowEnd)
            if used.count > SendPacer.keptWindows, let oldest = used.keys.min() {
                used.removeValue(forKey: oldest)
            }
        }
    }

    /// The debt (µs) at which the bucket sleeps, and how much of it (µs) it leaves to a late wake-up.
    static let slack: Int64 = 5_000, cushion: Int64 = 2_000

    /// How many windows `used` keeps.
    static let keptWindows = 64

    let window: RateWindow
    /// Permits asked of the shared window at a time.
    let chunk: Int
    private let now: UnixClock
    private let state = Mutex(State())

    /// A pacer drawing `chunk` permits at a time (at most a second's allowance) from `window`.
    init(window: RateWindow, chunk: Int, now: @escaping UnixClock) {
        self.window = window
        self.chunk = max(1, min(chunk, window.limit))
        self.now = now
    }

    /// Waits for a permit to send; returns the time it must be used by (Unix ms).
    /// - Throws: `CancellationError` once the task is cancelled; `DAOError` when the shared window cannot be read.
    func acquire() async throws -> Int64 {
        while true {
            try Task.checkCancellation()
            let current = now()
            let taken = state.withLock { state -> (deadline: Int64, notBefore: Int64, refill: Bool)? in  // µs
                guard state.remaining > 0, current < state.deadline else { return nil }
                state.remaining -= 1
                state.used[state.windowEnd, default: 0] += 1
                // Spaced as a leaky bucket: never sooner than `spacing` after the previous permit, so that neither a
                // window's start nor a pause's end lets a burst through.
                let notBefore = max(current * 1_000, state.nextAt)
                state.nextAt = notBefore + spacing
                let refill = state.remaining <= lowWater && !state.refilling
                if refill { state.refilling = true }
                return (state.deadline, notBefore, refill)
            }
            if let taken {
                if taken.refill { Task { await refillAhead() } }
                // A sleep lasts a millisecond or more and wakes late: the bucket sleeps only once its debt reaches
                // `slack`, and wakes `cushion` early, so that a late wake-up finds the next permits due rather
                // than losing their time (permits go at most `slack` early: a few at any rate).
                let wait = taken.notBefore - current * 1_000
                if wait >= Self.slack { try await Task.sleep(for: .microseconds(wait - Self.cushion)) }
                return taken.deadline
            }
            // Concurrent callers may each take a chunk: every grant is counted in the shared window, so together
            // they stay within the limit; a grant replaces an older window's leftovers.
            let grant = try await window.take(chunk)
            state.withLock { $0.add(grant) }
        }
    }

    /// The permits left at which the next grant is taken ahead: a grant is a database write of a few milliseconds
    /// under load, a permit a fraction of one at high rates, so a grant taken only once the permits ran out lost its
    /// wait to the window. The worker's chunk is a tenth of a second's allowance: half of one covers 50 ms of a
    /// database slowed by the fan-out's writes.
    private var lowWater: Int { chunk / 2 }

    /// Takes the next grant while the permits in hand last (at most one such take at a time; it ends within the
    /// next window, or when the database fails, when the callers take their own as before).
    private func refillAhead() async {
        let grant = try? await window.take(chunk)
        state.withLock { state in
            if let grant { state.add(grant) }
            state.refilling = false
        }
    }

    /// The share of a second's allowance the permits are spread for (percent): a send reaches FCM a few
    /// milliseconds after its permit, give or take, and permits go up to `slack` early. Spread for the whole
    /// allowance, up to 3,043 sends arrived at the fake FCM in some second (not one of the windows) at a cap of 3,000.
    static let headroomPercent: Int64 = 97

    /// The time between two permits, in microseconds: `headroomPercent` of a window's allowance spread over the part
    /// of it before the deadline, so that sends leave at the rate, not in a burst that a late request could carry
    /// into the next second.
    private var spacing: Int64 {
        (1_000 - RateWindow.margin) * 1_000 * 100 / (Int64(max(window.limit, 1)) * Self.headroomPercent)
    }

    /// Permits used per window, by the window's end (Unix ms), for the last windows.
    var used: [Int64: Int] { state.withLock { $0.used } }
}

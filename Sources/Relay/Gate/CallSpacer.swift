import DAO
import Synchronization

/// Spaces a process's calls evenly at `limit` a second: each call takes the next slot, `spacing` after the one
/// before, and waits for it. The shared window (`RateWindow`) holds every calendar second to the limit; the spacing
/// holds every sliding second too, where two windows' calls could otherwise meet at a second's edge (at
/// `FCM_SUBSCRIPTION_RATE=20`, 44 subscription calls were seen within one second).
final class CallSpacer: Sendable {
    /// The time between two slots, in microseconds: a second's allowance spread over the part of a window before its
    /// grants' deadline (`RateWindow.margin`).
    let spacing: Int64
    private let next = Mutex<Int64>(0)
    private let now: UnixClock

    init(limit: Int, now: @escaping UnixClock) {
        spacing = (1_000 - RateWindow.margin) * 1_000 / Int64(max(limit, 1))
        self.now = now
    }

    /// Takes the next slot for a caller at `current` (Unix µs) and returns when it comes (Unix µs).
    func slot(at current: Int64) -> Int64 {
        next.withLock { next in
            let slot = max(current, next)
            next = slot + spacing
            return slot
        }
    }

    /// Waits for the next slot. A wait shorter than `PacerState.slack` is not slept (a sleep lasts a millisecond or
    /// more): at high rates calls go a few slots early, never more than those.
    /// - Throws: `CancellationError` once the task is cancelled.
    func wait() async throws {
        let current = now() * 1_000
        let wait = slot(at: current) - current
        if wait >= PacerState.slack { try await Task.sleep(for: .microseconds(wait - PacerState.cushion)) }
    }
}

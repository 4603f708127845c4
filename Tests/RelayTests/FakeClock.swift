import HubTime
import Synchronization

/// A clock that stands still until the test moves it (Unix milliseconds), for the workers' `now`: a lease runs out, a
/// retry falls due, an escalation's `within_s` or a quiet window passes when `advance` says, not after a sleep.
final class FakeClock: Sendable {
    /// 2027-01-15T15:00:00.500Z: mid-second, so that a rate window's grant is never taken in its last 100 ms.
    static let start: Int64 = 1_800_025_200_500

    private let current: Mutex<Int64>

    init(_ start: Int64 = FakeClock.start) {
        current = Mutex(start)
    }

    /// The time now (Unix ms).
    var now: Int64 { current.withLock { $0 } }

    /// The clock as the workers and DAOs take it.
    var unix: UnixClock { { self.now } }

    /// Moves the clock on by `duration`.
    func advance(by duration: Duration) {
        current.withLock { $0 += duration.milliseconds }
    }

    /// Moves the clock to `time` (Unix ms); never back.
    func advance(to time: Int64) {
        current.withLock { $0 = max($0, time) }
    }
}

import Synchronization

/// A clock a test moves by hand (Unix ms): what a DAO or a worker reads as now, so that leases run out, retries come
/// due and windows end when the test says, not after a sleep.
public final class ManualClock: Sendable {
    private let time: Mutex<Int64>

    public init(_ start: Int64 = 1_700_000_000_000) { time = Mutex(start) }

    /// Now, as the clock stands.
    public func now() -> Int64 { time.withLock { $0 } }

    /// Moves the clock to `value`.
    public func set(_ value: Int64) { time.withLock { $0 = value } }

    /// Moves the clock on by `milliseconds`.
    public func advance(_ milliseconds: Int64) { time.withLock { $0 += milliseconds } }
}

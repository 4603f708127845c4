#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A wall clock in Unix milliseconds, injected as `now` wherever a test would move time.
public typealias UnixClock = @Sendable () -> Int64

/// Wall-clock time as the hub stores it (milliseconds since the epoch).
public enum UnixTime {
    /// Milliseconds since the Unix epoch, now: the `UnixClock` every component reads unless given another.
    @Sendable public static func nowMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

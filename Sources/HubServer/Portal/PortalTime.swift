#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Times as the portal shows them: UTC, to the minute (the hub does not know the reader's time zone).
enum PortalTime {
    /// `2026-11-23 09:41 UTC` for Unix milliseconds.
    static func text(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)) UTC"
    }
}

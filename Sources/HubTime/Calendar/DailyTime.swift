import Foundation

/// A time of day on a zone's wall clock, "HH:MM" (a daily digest's hour): the next instant it strikes.
public struct DailyTime: Sendable, Hashable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    /// "HH:MM", two digits each (00:00 to 23:59); nil otherwise.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), hour < 24, minute < 60
        else { return nil }
        (self.hour, self.minute) = (hour, minute)
    }

    public var description: String {
        (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }

    /// The first instant after `ms` (Unix ms) at which `zone`'s clock shows this time: today's when it is still to
    /// come, else tomorrow's. On a night the clock skips it (spring forward), the first valid time after it, as
    /// `LocalDateTime.instant(in:)` resolves.
    public func next(after ms: Int64, in zone: TimeZone) -> Int64 {
        let today = LocalDateTime(instant: ms, in: zone).date
        for offset in 0...2 {
            guard let wall = LocalDateTime(date: today.adding(days: offset), hour: hour, minute: minute) else {
                continue
            }
            let instant = wall.instant(in: zone)
            if instant > ms { return instant }
        }
        return ms + 86_400_000
    }
}

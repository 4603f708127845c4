import Foundation

/// A wall-clock time and an instant in a zone, both ways: the one conversion the event schedules (`Recurrence`) and
/// the portal's times in the school's zone (`SCHOOL_TIME_ZONE`) share.
extension LocalDateTime {
    /// The wall-clock time of instant `ms` (Unix ms, to the second) in `zone`.
    public init(instant ms: Int64, in zone: TimeZone) {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let wall = seconds + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
        let second = Int(((wall % 86_400) + 86_400) % 86_400)
        let date = LocalDate(daysSinceEpoch: Int((wall - Int64(second)) / 86_400))
        self.init(date: date, hour: second / 3600, minute: second % 3600 / 60, second: second % 60)!
    }

    /// The instant (Unix ms) of this time on `zone`'s wall clock: the first valid time after a skipped one (02:30 on
    /// a spring-forward night is 03:00), the earlier of a repeated one.
    public func instant(in zone: TimeZone) -> Int64 {
        let wall = wallSeconds
        let before = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall - 86_400))))
        let after = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall + 86_400))))
        let valid = [before, after].map { wall - $0 }.filter {
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double($0)))) == wall - $0
        }
        if let earliest = valid.min() { return earliest * 1000 }
        // In a gap: the moment the clocks jumped, the first valid wall-clock time after it.
        let probe = Date(timeIntervalSince1970: Double(min(wall - before, wall - after) - 1))
        if let jump = zone.nextDaylightSavingTimeTransition(after: probe) {
            return Int64(jump.timeIntervalSince1970) * 1000
        }
        return (wall - before) * 1000
    }
}

import Foundation

/// A device's quiet hours: a daily window of its own wall-clock time (`from` to `to`, in its time zone) during
/// which passive and active messages wait. A window may run past midnight (22:00 to 07:00). Times are read on the
/// zone's wall clock, so the window follows daylight saving time: it ends at 07:00 local time on the day the
/// clocks change as on any other day.
public struct QuietHours: Sendable, Hashable, CustomStringConvertible {
    /// When the window opens, minutes after local midnight (0..<1440).
    public let from: Int
    /// When it closes, minutes after local midnight (0..<1440); never `from`.
    public let to: Int
    /// The zone's IANA identifier (`Europe/Berlin`), as the device gave it.
    public let timeZoneID: String
    /// The zone, resolved once.
    private let timeZone: TimeZone

    /// The quiet hours `from` and `to` ("HH:MM", 24-hour) in the IANA zone `tz`, or the reason they are not valid
    /// quiet hours.
    public static func parse(from: String, to: String, tz: String) -> Result<QuietHours, QuietHoursProblem> {
        guard let start = minutes(from) else { return .failure(QuietHoursProblem("\"from\" must be a time HH:MM")) }
        guard let end = minutes(to) else { return .failure(QuietHoursProblem("\"to\" must be a time HH:MM")) }
        guard start != end else { return .failure(QuietHoursProblem("\"from\" and \"to\" must differ")) }
        guard let zone = IANAZone.named(tz) else {
            return .failure(QuietHoursProblem("\"tz\" must be an IANA time zone such as Europe/Berlin"))
        }
        return .success(QuietHours(from: start, to: end, timeZone: zone, id: tz))
    }

    /// The window; `id` is the zone's name as given (Foundation names "UTC" "GMT").
    private init(from: Int, to: Int, timeZone: TimeZone, id: String) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.timeZoneID = id
    }

    /// `from` as "HH:MM".
    public var fromText: String { Self.text(from) }
    /// `to` as "HH:MM".
    public var toText: String { Self.text(to) }

    /// The window written one way only, "HH:MM-HH:MM-Zone": equal windows have equal keys (the quiet topic is named
    /// from it).
    public var key: String { "\(fromText)-\(toText)-\(timeZoneID)" }

    public var description: String { key }

    public static func == (lhs: QuietHours, rhs: QuietHours) -> Bool { lhs.key == rhs.key }

    public func hash(into hasher: inout Hasher) { hasher.combine(key) }

    /// Whether the window holds at `time` (Unix ms): the zone's wall clock reads at or after `from` and before `to`
    /// (across midnight when `from` is later than `to`).
    public func isQuiet(at time: Int64) -> Bool {
        let minute = localMinute(at: time)
        return from < to ? (from..<to).contains(minute) : (minute >= from || minute < to)
    }

    /// The first instant after `time` (Unix ms) at which the zone's wall clock reads `to`: when the window open at
    /// `time` ends. On a day `to` does not exist (the clocks skip over it) the first instant after the gap; on a day
    /// it comes twice (the clocks go back) its first reading after `time`.
    public func end(after time: Int64) -> Int64 {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let start = Date(timeIntervalSince1970: Double(time) / 1000)
        let wanted = DateComponents(hour: to / 60, minute: to % 60, second: 0)
        // Either occurrence of a repeated time: whichever comes first after `time`.
        let candidates = [Calendar.RepeatedTimePolicy.first, .last].compactMap {
            calendar.nextDate(after: start, matching: wanted, matchingPolicy: .nextTime, repeatedTimePolicy: $0)
        }
        guard let next = candidates.min() else {
            // Not reached for a valid zone; a day later is the safe answer.
            return time + 86_400_000
        }
        return Int64((next.timeIntervalSince1970 * 1000).rounded())
    }

    /// Minutes after local midnight on the zone's wall clock at `time` (Unix ms).
    private func localMinute(at time: Int64) -> Int {
        let seconds = Int64((Double(time) / 1000).rounded(.down))
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
        let local = seconds + offset
        let secondOfDay = ((local % 86_400) + 86_400) % 86_400
        return Int(secondOfDay / 60)
    }

    /// "HH:MM" (00:00 to 23:59) as minutes after midnight.
    private static func minutes(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
            [0, 1, 3, 4].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) })
        else { return nil }
        let digit = { (index: Int) in Int(bytes[index] - UInt8(ascii: "0")) }
        let hour = digit(0) * 10 + digit(1), minute = digit(3) * 10 + digit(4)
        guard hour < 24, minute < 60 else { return nil }
        return hour * 60 + minute
    }

    private static func text(_ minutes: Int) -> String {
        let hour = minutes / 60, minute = minutes % 60
        return (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }
}

/// Why a `quiet_hours` value is not valid quiet hours: a sentence naming the field.
public struct QuietHoursProblem: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

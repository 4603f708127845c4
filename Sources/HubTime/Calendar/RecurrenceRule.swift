import Foundation

/// Why a recurrence rule was refused: a sentence naming the part at fault.
public struct RecurrenceRuleError: Error, Sendable, Equatable {
    public let message: String

    public init(_ message: String) { self.message = message }
}

/// An RFC 5545 RRULE value without its `RRULE:` name (`FREQ=WEEKLY;BYDAY=MO;COUNT=10`), in the subset the hub
/// expands: `FREQ` `DAILY`, `WEEKLY` or `MONTHLY`; `INTERVAL`; `BYDAY` (with ordinals, `2TU` or `-1FR`, for
/// `MONTHLY` only; a filter of weekdays for `DAILY`); `BYMONTHDAY` (`MONTHLY`; negative counts from the month's end);
/// `COUNT` or `UNTIL` (a local date-time, a date, or a UTC time with `Z`); `WKST=MO` (the only week start).
public struct RecurrenceRule: Sendable, Hashable, CustomStringConvertible {
    public enum Frequency: String, Sendable, Hashable {
        case daily = "DAILY", weekly = "WEEKLY", monthly = "MONTHLY"
    }

    /// A weekday of `BYDAY`, with its ordinal in the month (nil: every one).
    public struct Weekday: Sendable, Hashable {
        /// ISO weekday: 1 Monday ... 7 Sunday.
        public let day: Int
        /// 1...5 from the month's start, -5...-1 from its end; nil: every such weekday.
        public let ordinal: Int?

        static let names = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
    }

    /// The end of a series: inclusive.
    public enum Until: Sendable, Hashable {
        /// A local date-time in the event's zone.
        case local(LocalDateTime)
        /// A local date: the whole day.
        case date(LocalDate)
        /// An instant (Unix ms).
        case instant(Int64, text: String)
    }

    public let frequency: Frequency
    public let interval: Int
    public let byDay: [Weekday]
    public let byMonthDay: [Int]
    public let count: Int?
    public let until: Until?

    /// The rule of `text`.
    /// - Throws: `RecurrenceRuleError` naming the part at fault.
    public init(parsing text: String) throws(RecurrenceRuleError) {
        var frequency: Frequency?
        var interval = 1, byDay: [Weekday] = [], byMonthDay: [Int] = [], count: Int?, until: Until?
        var seen: Set<String> = []
        guard !text.isEmpty else { throw RecurrenceRuleError("the rule is empty (FREQ=WEEKLY;BYDAY=MO)") }
        for part in text.split(separator: ";", omittingEmptySubsequences: false) {
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, !pair[1].isEmpty else {
                throw RecurrenceRuleError("\"\(part)\" is not NAME=VALUE")
            }
            let name = pair[0].uppercased(), value = String(pair[1]).uppercased()
            // Numbers are digits alone ("+2" is not one); BYDAY and BYMONTHDAY take their own signs.
            if ["INTERVAL", "COUNT"].contains(name), !value.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw RecurrenceRuleError("\(name) must be a whole number")
            }
            guard seen.insert(name).inserted else { throw RecurrenceRuleError("\(name) is given twice") }
            switch name {
            case "FREQ":
                guard let parsed = Frequency(rawValue: value) else {
                    throw RecurrenceRuleError("FREQ=\(value) is not supported (DAILY, WEEKLY, MONTHLY)")
                }
                frequency = parsed
            case "INTERVAL":
                guard let parsed = Int(value), (1...1000).contains(parsed) else {
                    throw RecurrenceRuleError("INTERVAL must be a whole number from 1 to 1000")
                }
                interval = parsed
            case "BYDAY":
                byDay = try value.split(separator: ",", omittingEmptySubsequences: false).map {
                    entry throws(RecurrenceRuleError) in
                    try Self.weekday(entry)
                }
            case "BYMONTHDAY":
                byMonthDay = try value.split(separator: ",", omittingEmptySubsequences: false).map {
                    entry throws(RecurrenceRuleError) in
                    guard let day = Int(entry), (1...31).contains(abs(day)) else {
                        throw RecurrenceRuleError("BYMONTHDAY values must be 1 to 31 or -31 to -1")
                    }
                    return day
                }
            case "COUNT":
                guard let parsed = Int(value), (1...10_000).contains(parsed) else {
                    throw RecurrenceRuleError("COUNT must be a whole number from 1 to 10000")
                }
                count = parsed
            case "UNTIL":
                guard let parsed = Self.until(value) else {
                    throw RecurrenceRuleError(
                        "UNTIL must be a date (20270601), a local date-time (20270601T080000) or a UTC time"
                            + " (20270601T080000Z)")
                }
                until = parsed
            case "WKST":
                guard value == "MO" else { throw RecurrenceRuleError("WKST must be MO (weeks start on Monday)") }
            default:
                throw RecurrenceRuleError("\(name) is not supported (FREQ, INTERVAL, BYDAY, BYMONTHDAY, COUNT, UNTIL)")
            }
        }
        guard let frequency else { throw RecurrenceRuleError("FREQ is required (DAILY, WEEKLY, MONTHLY)") }
        guard count == nil || until == nil else { throw RecurrenceRuleError("COUNT and UNTIL cannot both be given") }
        if frequency != .monthly, byDay.contains(where: { $0.ordinal != nil }) {
            throw RecurrenceRuleError("BYDAY ordinals (2TU, -1FR) are for FREQ=MONTHLY only")
        }
        if frequency != .monthly, !byMonthDay.isEmpty {
            throw RecurrenceRuleError("BYMONTHDAY is for FREQ=MONTHLY only")
        }
        self.frequency = frequency
        self.interval = interval
        self.byDay = byDay
        self.byMonthDay = byMonthDay
        self.count = count
        self.until = until
    }

    /// A `BYDAY` entry: an optional signed ordinal and a two-letter weekday.
    static func weekday(_ entry: Substring) throws(RecurrenceRuleError) -> Weekday {
        guard entry.count >= 2, let day = Weekday.names.firstIndex(of: String(entry.suffix(2))) else {
            throw RecurrenceRuleError("BYDAY \"\(entry)\" is not a weekday (MO, TU, WE, TH, FR, SA, SU, or 2TU, -1FR)")
        }
        let prefix = entry.dropLast(2)
        guard !prefix.isEmpty else { return Weekday(day: day + 1, ordinal: nil) }
        guard let ordinal = Int(prefix), ordinal != 0, abs(ordinal) <= 5 else {
            throw RecurrenceRuleError("BYDAY \"\(entry)\": the ordinal must be 1 to 5 or -5 to -1")
        }
        return Weekday(day: day + 1, ordinal: ordinal)
    }

    /// `UNTIL`'s three forms.
    static func until(_ value: String) -> Until? {
        func date(_ text: Substring) -> LocalDate? {
            guard text.count == 8, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return LocalDate(
                year: Int(text.prefix(4))!, month: Int(text.dropFirst(4).prefix(2))!, day: Int(text.suffix(2))!)
        }
        let text = Substring(value)
        if let day = date(text) { return .date(day) }
        let utc = text.hasSuffix("Z")
        let body = utc ? text.dropLast() : text
        let halves = body.split(separator: "T", omittingEmptySubsequences: false)
        guard halves.count == 2, let day = date(halves[0]), halves[1].count == 6,
            halves[1].allSatisfy({ $0.isASCII && $0.isNumber }),
            let time = LocalDateTime(
                date: day, hour: Int(halves[1].prefix(2))!, minute: Int(halves[1].dropFirst(2).prefix(2))!,
                second: Int(halves[1].suffix(2))!)
        else { return nil }
        return utc ? .instant(time.wallSeconds * 1000, text: value) : .local(time)
    }

    /// The canonical text: the parts in a fixed order, `INTERVAL` only when not 1.
    public var description: String {
        var parts = ["FREQ=\(frequency.rawValue)"]
        if interval != 1 { parts.append("INTERVAL=\(interval)") }
        if !byDay.isEmpty {
            parts.append(
                "BYDAY="
                    + byDay.map { ($0.ordinal.map(String.init) ?? "") + Weekday.names[$0.day - 1] }.joined(
                        separator: ","))
        }
        if !byMonthDay.isEmpty { parts.append("BYMONTHDAY=" + byMonthDay.map(String.init).joined(separator: ",")) }
        if let count { parts.append("COUNT=\(count)") }
        switch until {
        case .local(let time)?:
            parts.append(
                "UNTIL="
                    + time.description.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: ""))
        case .date(let day)?: parts.append("UNTIL=" + day.description.replacingOccurrences(of: "-", with: ""))
        case .instant(_, let text)?: parts.append("UNTIL=\(text)")
        case nil: break
        }
        return parts.joined(separator: ";")
    }
}

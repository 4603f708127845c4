/// An ISO 8601 duration of weeks, days, hours, minutes and seconds ("P1D", "PT30M", "P1DT2H", "PT0S"): how long
/// before an occurrence a reminder goes. Weeks and days are nominal (calendar days in the event's zone, so "P1D" before
/// 18:00 is 18:00 the day before across a clock change); hours, minutes and seconds exact. Years and months are not
/// taken (a month has no fixed length: say "P4W" or "P30D"), nor fractions or signs; at most a year in all.
public struct ISODuration: Sendable, Hashable, CustomStringConvertible {
    public let weeks: Int
    public let days: Int
    public let hours: Int
    public let minutes: Int
    public let seconds: Int

    /// The longest lead taken: a year.
    static let maximumSeconds = 366 * 86_400

    /// The duration of `text`, or nil.
    public init?(parsing text: String) {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return nil }
        rest = rest.dropFirst()
        var values: [Character: Int] = [:]
        var inTime = false
        var digits = ""
        var order: [Character] = []
        for character in rest {
            if character == "T" {
                guard !inTime, digits.isEmpty else { return nil }
                inTime = true
                continue
            }
            if character.isASCII, character.isNumber {
                digits.append(character)
                guard digits.count <= 9 else { return nil }
                continue
            }
            // A unit: W and D before T; H, M and S after it; each once, in order.
            let unit: Character
            switch (character, inTime) {
            case ("W", false), ("D", false): unit = character
            case ("H", true), ("M", true), ("S", true): unit = character
            default: return nil
            }
            guard let value = Int(digits), values[unit] == nil else { return nil }
            let rank = "WDHMS".firstIndex(of: unit)!
            if let last = order.last, "WDHMS".firstIndex(of: last)! >= rank { return nil }
            values[unit] = value
            order.append(unit)
            digits = ""
        }
        // Digits without a unit, "PT" without a time part, or nothing at all.
        guard digits.isEmpty, !order.isEmpty, !(inTime && !order.contains(where: { "HMS".contains($0) })) else {
            return nil
        }
        self.weeks = values["W"] ?? 0
        self.days = values["D"] ?? 0
        self.hours = values["H"] ?? 0
        self.minutes = values["M"] ?? 0
        self.seconds = values["S"] ?? 0
        guard nominalSeconds <= Self.maximumSeconds else { return nil }
    }

    /// The calendar days it counts (weeks as 7).
    public var calendarDays: Int { weeks * 7 + days }

    /// The exact seconds it counts after the calendar days.
    public var exactSeconds: Int { hours * 3600 + minutes * 60 + seconds }

    /// Its length with a day as 86,400 seconds.
    public var nominalSeconds: Int { calendarDays * 86_400 + exactSeconds }

    /// The canonical text: "P1W2DT3H4M5S" without the zero parts; "PT0S" for none.
    public var description: String {
        var text = "P"
        if weeks > 0 { text += "\(weeks)W" }
        if days > 0 { text += "\(days)D" }
        if exactSeconds > 0 {
            text += "T"
            if hours > 0 { text += "\(hours)H" }
            if minutes > 0 { text += "\(minutes)M" }
            if seconds > 0 { text += "\(seconds)S" }
        }
        return text == "P" ? "PT0S" : text
    }
}

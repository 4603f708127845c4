import DAO
import Foundation
import HubTime
import Mongo

/// An event as an RFC 5545 calendar file (`GET /event/:eventID.ics`): one `VEVENT` with the series (`RRULE`), its
/// exceptions (`EXDATE`) and its reminders (`VALARM`), its times in the event's zone with that zone's `VTIMEZONE`
/// (the offsets and transitions Foundation's time-zone database gives for the years the series spans), lines folded
/// at 75 octets and ended by CRLF, so an app's "save to calendar" needs no parsing of its own.
public enum EventCalendar {
    /// The calendar file of `event` (its schedule read as `EventSchedule`), stamped `now` (Unix ms).
    public static func file(of event: Event, schedule: EventSchedule, now: Int64) -> String {
        var lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//msi-hub//events//EN", "CALSCALE:GREGORIAN"]
        let zone = event.schedule.timeZone
        lines += timeZone(schedule.timeZone, id: zone, from: schedule.span?.first ?? now, to: schedule.span?.last)
        lines += ["BEGIN:VEVENT", "UID:\(event.id.hex)@msi-hub", "DTSTAMP:\(utc(now))"]
        lines.append("DTSTART;TZID=\(zone):\(compact(schedule.start))")
        if let end = schedule.end { lines.append("DTEND;TZID=\(zone):\(compact(end))") }
        if let rule = event.schedule.recurrence { lines.append("RRULE:\(rule)") }
        for date in event.schedule.exceptions {
            // An exception at the series' time of day on that date.
            let time = String(compact(schedule.start).dropFirst(8))
            lines.append("EXDATE;TZID=\(zone):\(date.replacingOccurrences(of: "-", with: ""))\(time)")
        }
        lines.append("SUMMARY:\(text(event.template["title"]?.stringValue ?? ""))")
        if let message = event.template["message"]?.stringValue { lines.append("DESCRIPTION:\(text(message))") }
        if let location = event.location { lines.append("LOCATION:\(text(location))") }
        lines.append("SEQUENCE:\(max(0, event.version - 1))")
        for lead in event.schedule.reminders {
            lines += [
                "BEGIN:VALARM", "ACTION:DISPLAY", "TRIGGER:-\(lead)",
                "DESCRIPTION:\(text(event.template["title"]?.stringValue ?? "Reminder"))", "END:VALARM",
            ]
        }
        lines += ["END:VEVENT", "END:VCALENDAR"]
        return lines.map(folded).joined(separator: "\r\n") + "\r\n"
    }

    /// "20270301T080000" of a local date-time.
    static func compact(_ time: LocalDateTime) -> String {
        time.description.replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }

    /// "20270301T070000Z" of an instant (Unix ms).
    static func utc(_ ms: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// A TEXT value escaped (RFC 5545 3.3.11): backslash, semicolon, comma and newlines.
    static func text(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case ";": escaped += "\\;"
            case ",": escaped += "\\,"
            case "\n", "\r\n": escaped += "\\n"
            case "\r": continue
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A content line folded at 75 octets (RFC 5545 3.1): the rest on lines opened by a space, never inside a
    /// UTF-8 sequence.
    static func folded(_ line: String) -> String {
        var parts: [String] = []
        var current = ""
        var octets = 0
        for character in line {
            let size = String(character).utf8.count
            let limit = parts.isEmpty ? 75 : 74
            if octets + size > limit {
                parts.append(current)
                current = ""
                octets = 0
            }
            current.append(character)
            octets += size
        }
        parts.append(current)
        return parts.joined(separator: "\r\n ")
    }

    /// The `VTIMEZONE` of `zone`: each offset change from a year before `from` through `to` (or ten years on), as
    /// `STANDARD` and `DAYLIGHT` observances; a zone without changes one `STANDARD`.
    static func timeZone(_ zone: TimeZone, id: String, from: Int64, to: Int64?) -> [String] {
        var lines = ["BEGIN:VTIMEZONE", "TZID:\(id)"]
        let start = Date(timeIntervalSince1970: Double(from) / 1000 - 366 * 86_400)
        let end = Date(timeIntervalSince1970: Double(to ?? from) / 1000 + (to == nil ? 3_653 : 1) * 86_400)
        var transitions: [Date] = []
        var cursor = start
        while let next = zone.nextDaylightSavingTimeTransition(after: cursor), next < end, transitions.count < 200 {
            transitions.append(next)
            cursor = next
        }
        func offset(_ seconds: Int) -> String {
            let sign = seconds < 0 ? "-" : "+"
            let minutes = abs(seconds) / 60
            return sign + String(format: "%02d%02d", minutes / 60, minutes % 60)
        }
        guard !transitions.isEmpty else {
            let seconds = zone.secondsFromGMT(for: start)
            return lines + [
                "BEGIN:STANDARD", "DTSTART:19700101T000000", "TZOFFSETFROM:\(offset(seconds))",
                "TZOFFSETTO:\(offset(seconds))", "END:STANDARD", "END:VTIMEZONE",
            ]
        }
        var local = Calendar(identifier: .gregorian)
        local.timeZone = TimeZone(identifier: "UTC")!
        for transition in transitions {
            let before = zone.secondsFromGMT(for: transition.addingTimeInterval(-1))
            let after = zone.secondsFromGMT(for: transition)
            let kind = zone.isDaylightSavingTime(for: transition) ? "DAYLIGHT" : "STANDARD"
            // DTSTART is the local time the change happens at, on the clock before it.
            let wall = transition.addingTimeInterval(Double(before))
            let parts = local.dateComponents([.year, .month, .day, .hour, .minute, .second], from: wall)
            let stamp = String(
                format: "%04d%02d%02dT%02d%02d%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1,
                parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
            lines += [
                "BEGIN:\(kind)", "DTSTART:\(stamp)", "TZOFFSETFROM:\(offset(before))", "TZOFFSETTO:\(offset(after))",
                "END:\(kind)",
            ]
        }
        return lines + ["END:VTIMEZONE"]
    }
}

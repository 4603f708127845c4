import DAO
import Foundation
import HubTime
import Mongo

/// An event's schedule read and held to its rules, ready to expand: the one place that says when an event's
/// occurrences and reminders are (`Recurrence`, in the event's zone), where its span lies, which reminder comes next
/// and which are due.
public struct EventSchedule: Sendable {
    public let stored: Event.Schedule
    public let start: LocalDateTime
    public let end: LocalDateTime?
    public let timeZone: TimeZone
    public let recurrence: Recurrence
    public let leads: [ISODuration]

    /// At most this many reminders an event.
    public static let maximumReminders = 5
    /// At most this many exception dates an event.
    public static let maximumExceptions = 1_000
    /// How late a reminder is still sent after an outage: while its occurrence has not started, and a reminder at
    /// the start (`PT0S`) this long after it.
    public static let lateStartReminderMS: Int64 = 15 * 60_000

    /// `schedule` read: its times, zone, recurrence, exception dates and reminders.
    /// - Throws: `EventRefusal.invalidSchedule` naming the field at fault.
    public init(_ schedule: Event.Schedule) throws(EventRefusal) {
        func refuse(_ message: String) -> EventRefusal { EventRefusal(.invalidSchedule, message) }
        guard let start = LocalDateTime(parsing: schedule.startsAt) else {
            throw refuse("\"starts_at\" must be a local date-time YYYY-MM-DDTHH:MM[:SS] (no zone; the zone is \"tz\")")
        }
        var end: LocalDateTime?
        if let endsAt = schedule.endsAt {
            guard let parsed = LocalDateTime(parsing: endsAt), parsed > start else {
                throw refuse("\"ends_at\" must be a local date-time YYYY-MM-DDTHH:MM[:SS] after \"starts_at\"")
            }
            end = parsed
        }
        guard let timeZone = IANAZone.named(schedule.timeZone) else {
            throw refuse("\"tz\" must be an IANA time zone (Europe/Berlin, America/New_York, UTC)")
        }
        var rule: RecurrenceRule?
        if let text = schedule.recurrence {
            do {
                rule = try RecurrenceRule(parsing: text)
            } catch {
                throw refuse("\"recurrence\": \(error.message)")
            }
        }
        guard schedule.exceptions.count <= Self.maximumExceptions else {
            throw refuse("\"exdates\": at most \(Self.maximumExceptions) dates")
        }
        var exceptions: Set<LocalDate> = []
        for (index, text) in schedule.exceptions.enumerated() {
            guard let date = LocalDate(parsing: text) else {
                throw refuse("\"exdates[\(index)]\" must be a date YYYY-MM-DD")
            }
            exceptions.insert(date)
        }
        guard schedule.reminders.count <= Self.maximumReminders else {
            throw refuse("\"reminders\": at most \(Self.maximumReminders) lead times")
        }
        var leads: [ISODuration] = []
        for (index, text) in schedule.reminders.enumerated() {
            guard let lead = ISODuration(parsing: text) else {
                throw refuse(
                    "\"reminders[\(index)]\" must be an ISO 8601 duration of weeks, days, hours, minutes or seconds"
                        + " (P1D, PT30M, PT0S), at most a year")
            }
            if !leads.contains(lead) { leads.append(lead) }
        }
        self.stored = Event.Schedule(
            startsAt: start.description, endsAt: end?.description, timeZone: schedule.timeZone,
            recurrence: rule?.description, exceptions: exceptions.map(\.description).sorted(),
            reminders: leads.map(\.description))
        self.start = start
        self.end = end
        self.timeZone = timeZone
        self.recurrence = Recurrence(start: start, timeZone: timeZone, rule: rule, exceptions: exceptions)
        self.leads = leads
        guard span != nil else { throw refuse("the event has no occurrence (every date of it is an exception)") }
    }

    /// Where the occurrences lie: the first's instant and the last's (nil: the series has no end); nil when there is
    /// none.
    public var span: EventDAO.Span? {
        guard let first = recurrence.first(atOrAfter: Int64.min / 2) else { return nil }
        guard let rule = recurrence.rule, rule.count == nil, rule.until == nil else {
            let all = recurrence.occurrences(from: first.instant, to: Int64.max / 2, limit: 10_000)
            return EventDAO.Span(first: first.instant, last: all.last?.instant ?? first.instant)
        }
        return EventDAO.Span(first: first.instant, last: nil)
    }

    /// How long an occurrence lasts (Unix ms), from `ends_at`; zero without one.
    public var durationMS: Int64 {
        guard let end, let first = recurrence.first(atOrAfter: Int64.min / 2) else { return 0 }
        let endOccurrence = Recurrence(start: end, timeZone: timeZone, rule: nil).first(atOrAfter: Int64.min / 2)
        return max(0, (endOccurrence?.instant ?? first.instant) - first.instant)
    }

    /// The longest lead (ms, counted exactly: days as 24 h plus a DST hour), bounding how far ahead of a time an
    /// occurrence with a reminder after it may lie.
    var longestLeadMS: Int64 {
        (leads.map { Int64($0.nominalSeconds) * 1000 }.max() ?? 0) + 3_600_000
    }

    /// A reminder: an occurrence and a lead time, and when it is sent (Unix ms).
    public struct Reminder: Sendable, Hashable {
        public let occurrence: Recurrence.Occurrence
        public let lead: ISODuration
        public let at: Int64
    }

    /// The reminders with a time in (`after`, `through`], in time order.
    public func reminders(after: Int64, through: Int64) -> [Reminder] {
        guard !leads.isEmpty, through > after else { return [] }
        let occurrences = recurrence.occurrences(from: after, to: through + longestLeadMS + 1, limit: 10_000)
        var found: [Reminder] = []
        for occurrence in occurrences {
            for lead in leads {
                let at = recurrence.instant(of: lead, before: occurrence)
                if at > after && at <= through { found.append(Reminder(occurrence: occurrence, lead: lead, at: at)) }
            }
        }
        return found.sorted { $0.at < $1.at }
    }

    /// The first reminder time after `time` (Unix ms), nil when none is to come.
    public func nextReminder(after time: Int64) -> Int64? {
        guard !leads.isEmpty else { return nil }
        var best: Int64?
        var from = time
        // Occurrences in order: a later one's reminders come after an earlier one's once it is a lead past the best.
        for _ in 0..<100 {
            let occurrences = recurrence.occurrences(from: from, to: Int64.max / 2, limit: 64)
            for occurrence in occurrences {
                if let best, occurrence.instant - longestLeadMS > best { return best }
                for lead in leads {
                    let at = recurrence.instant(of: lead, before: occurrence)
                    if at > time, at < (best ?? .max) { best = at }
                }
            }
            guard occurrences.count == 64, let last = occurrences.last else { return best }
            from = last.instant + 1
        }
        return best
    }

    /// Whether `reminder` is still worth sending at `now`: its occurrence has not started, or it is a reminder at
    /// the start at most `lateStartReminderMS` late.
    public func isStillTimely(_ reminder: Reminder, now: Int64) -> Bool {
        if now < reminder.occurrence.instant { return true }
        return reminder.lead.nominalSeconds == 0 && now - reminder.at <= Self.lateStartReminderMS
    }
}

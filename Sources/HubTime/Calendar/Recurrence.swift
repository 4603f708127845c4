import Foundation

/// An event's occurrences: its start and, with a rule, every date the rule gives after it, at the start's wall-clock
/// time in the event's zone, less the exception dates. The one place the hub turns a schedule into instants.
///
/// Expanded on the zone's wall clock (08:00 stays 08:00 across daylight saving: a weekly Monday 08:00 Europe/Berlin
/// series is 07:00Z before 2027-03-28 and 06:00Z after). A wall-clock time the clocks skip (02:30 on a spring-forward
/// night) is moved to the first valid time after the gap (03:00); a time they repeat (02:30 on a fall-back night) is
/// the first of the two. The start is always the first occurrence (RFC 5545's DTSTART); `COUNT` counts it and the
/// excepted dates too (an exception removes an occurrence from the set, it does not move the count on).
public struct Recurrence: Sendable {
    /// One occurrence: its local date (its id), its wall-clock start as scheduled, and its instant.
    public struct Occurrence: Sendable, Hashable {
        public let date: LocalDate
        public let local: LocalDateTime
        /// Unix ms.
        public let instant: Int64
    }

    public let start: LocalDateTime
    public let timeZone: TimeZone
    public let rule: RecurrenceRule?
    public let exceptions: Set<LocalDate>

    /// How many periods in a row without an occurrence end an expansion (a rule that never matches).
    static let emptyPeriodsAllowed = 2_000

    public init(start: LocalDateTime, timeZone: TimeZone, rule: RecurrenceRule?, exceptions: Set<LocalDate> = []) {
        self.start = start
        self.timeZone = timeZone
        self.rule = rule
        self.exceptions = exceptions
    }

    // MARK: Instants

    /// The instant (Unix ms) of `local` on the zone's wall clock: the first valid time after a skipped one, the
    /// earlier of a repeated one.
    public func instant(of local: LocalDateTime) -> Int64 { local.instant(in: timeZone) }

    /// The local date of instant `ms` in the zone.
    func localDate(of ms: Int64) -> LocalDate { LocalDateTime(instant: ms, in: timeZone).date }

    /// When the reminder `lead` before `occurrence` goes (Unix ms): its calendar days back on the wall clock (same
    /// time of day), then its hours, minutes and seconds back exactly.
    public func instant(of lead: ISODuration, before occurrence: Occurrence) -> Int64 {
        let day = occurrence.local.on(occurrence.local.date.adding(days: -lead.calendarDays))
        let base = lead.calendarDays == 0 ? occurrence.instant : instant(of: day)
        return base - Int64(lead.exactSeconds) * 1000
    }

    // MARK: Expansion

    /// The occurrences starting in [`from`, `to`) (Unix ms), in order, at most `limit`.
    public func occurrences(from: Int64, to: Int64, limit: Int = 1_000) -> [Occurrence] {
        guard limit > 0, to > from else { return [] }
        var found: [Occurrence] = []
        expand(from: from) { occurrence in
            if occurrence.instant >= to { return false }
            if occurrence.instant >= from, !exceptions.contains(occurrence.date) { found.append(occurrence) }
            return found.count < limit
        }
        return found
    }

    /// The first occurrence starting at or after `time` (Unix ms), nil when none is left.
    public func first(atOrAfter time: Int64) -> Occurrence? {
        occurrences(from: time, to: Int64.max / 4, limit: 1).first
    }

    /// The occurrence on local date `date`, nil when the series has none that day (or it is an exception).
    public func occurrence(on date: LocalDate) -> Occurrence? {
        guard !exceptions.contains(date) else { return nil }
        let from = instant(of: start.on(date.adding(days: -1)))
        return occurrences(from: from, to: from + 3 * 86_400_000, limit: 10).first { $0.date == date }
    }

    /// Hands each occurrence in order (excepted ones too, since they count for `COUNT`) to `body` from about `from`
    /// on, until `body` answers false or the series ends.
    private func expand(from: Int64, _ body: (Occurrence) -> Bool) {
        let first = occurrence(at: start)
        guard let rule else {
            _ = body(first)
            return
        }
        var emitted = 1
        guard ended(first, count: 1) == false else { return }
        guard body(first) else { return }
        // Without COUNT, whole periods are skipped up to `from`; with it, each occurrence is counted from the start.
        var period = rule.count == nil ? max(0, firstPeriod(near: from, rule: rule)) : 0
        var empty = 0
        while empty < Self.emptyPeriodsAllowed {
            let dates = self.dates(inPeriod: period, rule: rule).filter { $0 > start.date }
            period += 1
            if dates.isEmpty {
                empty += 1
                continue
            }
            empty = 0
            for date in dates {
                let occurrence = self.occurrence(at: start.on(date))
                emitted += 1
                if ended(occurrence, count: emitted) { return }
                if !body(occurrence) { return }
            }
        }
    }

    /// The occurrence at wall-clock time `local`.
    private func occurrence(at local: LocalDateTime) -> Occurrence {
        Occurrence(date: local.date, local: local, instant: instant(of: local))
    }

    /// Whether `occurrence`, the `count`th, is past the rule's end.
    private func ended(_ occurrence: Occurrence, count: Int) -> Bool {
        guard let rule else { return false }
        if let limit = rule.count { return count > limit }
        switch rule.until {
        case .local(let until)?: return occurrence.local > until
        case .date(let until)?: return occurrence.date > until
        case .instant(let until, _)?: return occurrence.instant > until
        case nil: return false
        }
    }

    /// A period a little before the one holding `from`: where an expansion asked for `from` on may begin.
    private func firstPeriod(near from: Int64, rule: RecurrenceRule) -> Int {
        let target = localDate(of: from).adding(days: -2)
        guard target > start.date else { return 0 }
        switch rule.frequency {
        case .daily:
            return (target.daysSinceEpoch - start.date.daysSinceEpoch) / rule.interval - 1
        case .weekly:
            let weeks = (target.daysSinceEpoch - Self.monday(of: start.date).daysSinceEpoch) / 7
            return weeks / rule.interval - 1
        case .monthly:
            let months = (target.year - start.date.year) * 12 + target.month - start.date.month
            return months / rule.interval - 1
        }
    }

    /// The Monday of `date`'s week.
    static func monday(of date: LocalDate) -> LocalDate { date.adding(days: 1 - date.weekday) }

    /// The dates of period `index` (the start's period is 0) the rule gives, in order.
    private func dates(inPeriod index: Int, rule: RecurrenceRule) -> [LocalDate] {
        let days = Set(rule.byDay.map(\.day))
        switch rule.frequency {
        case .daily:
            let date = start.date.adding(days: index * rule.interval)
            return days.isEmpty || days.contains(date.weekday) ? [date] : []
        case .weekly:
            let monday = Self.monday(of: start.date).adding(days: 7 * index * rule.interval)
            let weekdays = days.isEmpty ? [start.date.weekday] : days.sorted()
            return weekdays.map { monday.adding(days: $0 - 1) }
        case .monthly:
            let months = start.date.month - 1 + index * rule.interval
            let year = start.date.year + months / 12, month = months % 12 + 1
            guard year <= 9999 else { return [] }
            let length = LocalDate.days(inMonth: month, of: year)
            var byMonthDay: Set<Int>?
            if !rule.byMonthDay.isEmpty {
                byMonthDay = Set(
                    rule.byMonthDay.compactMap { day in
                        let resolved = day > 0 ? day : length + 1 + day
                        return (1...length).contains(resolved) ? resolved : nil
                    })
            }
            var byDay: Set<Int>?
            if !rule.byDay.isEmpty {
                let firstWeekday = LocalDate(year: year, month: month, day: 1)!.weekday
                var matched: Set<Int> = []
                for weekday in rule.byDay {
                    let first = (weekday.day - firstWeekday + 7) % 7 + 1
                    let all = Array(stride(from: first, through: length, by: 7))
                    switch weekday.ordinal {
                    case nil: matched.formUnion(all)
                    case let ordinal? where ordinal > 0: if ordinal <= all.count { matched.insert(all[ordinal - 1]) }
                    case let ordinal?: if -ordinal <= all.count { matched.insert(all[all.count + ordinal]) }
                    }
                }
                byDay = matched
            }
            var chosen: Set<Int>
            switch (byMonthDay, byDay) {
            case (let monthDays?, let weekDays?): chosen = monthDays.intersection(weekDays)
            case (let monthDays?, nil): chosen = monthDays
            case (nil, let weekDays?): chosen = weekDays
            case (nil, nil): chosen = start.date.day <= length ? [start.date.day] : []
            }
            return chosen.sorted().compactMap { LocalDate(year: year, month: month, day: $0) }
        }
    }
}

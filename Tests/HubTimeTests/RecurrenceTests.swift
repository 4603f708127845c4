import Foundation
import HubTime
import Testing

/// The expansion of an event's schedule: rules read and refused, occurrences on the zone's wall clock across
/// daylight-saving changes in two zones, ordinals, month ends, Feb 29, the ends of a series, exceptions, and
/// reminder times. Expected instants are written out by hand in UTC.
@Suite("Recurrence: occurrences in the event's zone")
struct RecurrenceTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    static let newYork = TimeZone(identifier: "America/New_York")!

    /// Unix ms of "YYYY-MM-DDTHH:MM:SSZ".
    static func utc(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        return Int64(formatter.date(from: text)!.timeIntervalSince1970 * 1000)
    }

    /// "YYYY-MM-DDTHH:MM:SSZ" of Unix ms.
    static func text(_ ms: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    static func series(
        _ start: String, _ zone: TimeZone = berlin, _ rule: String?, except: [String] = []
    ) throws -> Recurrence {
        Recurrence(
            start: try #require(LocalDateTime(parsing: start)), timeZone: zone,
            rule: try rule.map { try RecurrenceRule(parsing: $0) },
            exceptions: Set(except.compactMap(LocalDate.init(parsing:))))
    }

    /// The UTC texts of the occurrences in [from, to).
    static func instants(_ recurrence: Recurrence, _ from: String, _ to: String, limit: Int = 100) -> [String] {
        recurrence.occurrences(from: utc(from), to: utc(to), limit: limit).map { text($0.instant) }
    }

    @Test func rulesAreReadCanonicallyAndTheirFaultsNamed() throws {
        #expect(
            try RecurrenceRule(parsing: "freq=weekly;byday=MO,WE;interval=2;count=10").description
                == "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=10")
        #expect(
            try RecurrenceRule(parsing: "FREQ=MONTHLY;BYDAY=-1FR;UNTIL=20271231T235959Z").description
                == "FREQ=MONTHLY;BYDAY=-1FR;UNTIL=20271231T235959Z")
        let refusals: [(String, String)] = [
            ("FREQ=YEARLY", "FREQ=YEARLY"), ("BYDAY=MO", "FREQ is required"), ("FREQ=DAILY;INTERVAL=0", "INTERVAL"),
            ("FREQ=WEEKLY;BYDAY=2MO", "ordinals"), ("FREQ=MONTHLY;BYDAY=XX", "BYDAY \"XX\""),
            ("FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY"), ("FREQ=DAILY;COUNT=2;UNTIL=20270101", "COUNT and UNTIL"),
            ("FREQ=DAILY;BYHOUR=8", "BYHOUR is not supported"), ("FREQ=DAILY;FREQ=DAILY", "twice"),
            ("FREQ=DAILY;UNTIL=2027-01-01", "UNTIL"), ("FREQ=DAILY;", "NAME=VALUE"), ("", "empty"),
            ("FREQ=WEEKLY;WKST=SU", "WKST"), ("FREQ=DAILY;INTERVAL=+2", "INTERVAL"),
            ("FREQ=DAILY;BYMONTHDAY=1", "MONTHLY only"),
        ]
        for (text, named) in refusals {
            do {
                _ = try RecurrenceRule(parsing: text)
                Issue.record("\(text) was taken")
            } catch {
                #expect(error.message.contains(named), "\(text): \(error.message)")
            }
        }
    }

    @Test func datesTimesAndLeadTimesAreReadStrictly() {
        #expect(LocalDate(parsing: "2028-02-29")?.description == "2028-02-29")
        #expect(LocalDate(parsing: "2027-02-29") == nil && LocalDate(parsing: "2027-1-01") == nil)
        #expect(LocalDateTime(parsing: "2027-03-01T08:00")?.description == "2027-03-01T08:00:00")
        #expect(LocalDateTime(parsing: "2027-03-01T08:00Z") == nil && LocalDateTime(parsing: "2027-03-01T24:00") == nil)
        #expect(LocalDate(parsing: "2027-03-01")?.weekday == 1 && LocalDate(parsing: "2026-11-29")?.weekday == 7)
        #expect(
            ISODuration(parsing: "P1D")?.description == "P1D" && ISODuration(parsing: "PT90M")?.exactSeconds == 5_400)
        #expect(ISODuration(parsing: "P1W2DT3H4M5S")?.description == "P1W2DT3H4M5S")
        #expect(ISODuration(parsing: "PT0S")?.nominalSeconds == 0)
        for refused in ["", "P", "PT", "P1M", "P1Y", "-P1D", "P1.5D", "PT1D", "P1H", "P400D", "P1DT", "P2D1W"] {
            #expect(ISODuration(parsing: refused) == nil, "\(refused)")
        }
    }

    @Test func aWeeklyMondayAtEightStaysAtEightAcrossBerlinsSpringAndAutumnChanges() throws {
        let assembly = try Self.series("2027-03-15T08:00", Self.berlin, "FREQ=WEEKLY;BYDAY=MO")
        #expect(
            Self.instants(assembly, "2027-03-15T00:00:00Z", "2027-04-06T00:00:00Z") == [
                "2027-03-15T07:00:00Z", "2027-03-22T07:00:00Z", "2027-03-29T06:00:00Z", "2027-04-05T06:00:00Z",
            ])
        #expect(
            Self.instants(assembly, "2027-10-24T00:00:00Z", "2027-11-02T00:00:00Z") == [
                "2027-10-25T06:00:00Z", "2027-11-01T07:00:00Z",
            ])
        #expect(
            assembly.occurrences(from: Self.utc("2027-03-29T00:00:00Z"), to: Self.utc("2027-03-30T00:00:00Z"))
                .first?.local.description == "2027-03-29T08:00:00")
    }

    @Test func newYorksChangesAndTheTimesTheClocksSkipOrRepeat() throws {
        let daily = try Self.series("2027-03-13T09:00", Self.newYork, "FREQ=DAILY;COUNT=3")
        #expect(
            Self.instants(daily, "2027-03-01T00:00:00Z", "2027-04-01T00:00:00Z") == [
                "2027-03-13T14:00:00Z", "2027-03-14T13:00:00Z", "2027-03-15T13:00:00Z",
            ])
        // 02:30 on the spring-forward night does not exist: the first valid time after the gap, 03:00.
        let skipped = try Self.series("2027-03-27T02:30", Self.berlin, "FREQ=DAILY;COUNT=3")
        #expect(
            Self.instants(skipped, "2027-03-01T00:00:00Z", "2027-04-01T00:00:00Z") == [
                "2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z",
            ])
        // 01:30 on New York's fall-back night happens twice: the first (EDT, -4).
        let repeated = try Self.series("2027-11-06T01:30", Self.newYork, "FREQ=DAILY;COUNT=2")
        #expect(
            Self.instants(repeated, "2027-11-01T00:00:00Z", "2027-11-10T00:00:00Z") == [
                "2027-11-06T05:30:00Z", "2027-11-07T05:30:00Z",
            ])
        let berlinAutumn = try Self.series("2027-10-31T02:30", Self.berlin, nil)
        #expect(Self.instants(berlinAutumn, "2027-10-30T00:00:00Z", "2027-11-01T00:00:00Z") == ["2027-10-31T00:30:00Z"])
    }

    @Test func monthlyOrdinalsMonthEndsAndTheTwentyNinthOfFebruary() throws {
        let secondTuesday = try Self.series("2027-01-12T18:00", Self.berlin, "FREQ=MONTHLY;BYDAY=2TU;COUNT=4")
        #expect(
            secondTuesday.occurrences(from: 0, to: Self.utc("2028-01-01T00:00:00Z")).map(\.date.description) == [
                "2027-01-12", "2027-02-09", "2027-03-09", "2027-04-13",
            ])
        let lastFriday = try Self.series("2027-01-29T15:00", Self.berlin, "FREQ=MONTHLY;BYDAY=-1FR")
        #expect(
            lastFriday.occurrences(from: 0, to: Self.utc("2027-05-01T00:00:00Z")).map(\.date.description) == [
                "2027-01-29", "2027-02-26", "2027-03-26", "2027-04-30",
            ])
        let lastDay = try Self.series("2027-01-31T12:00", Self.berlin, "FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=3")
        #expect(
            lastDay.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-01-31", "2027-02-28", "2027-03-31",
            ])
        // The 31st: months without one are skipped.
        let thirtyFirst = try Self.series("2027-01-31T12:00", Self.berlin, "FREQ=MONTHLY;COUNT=4")
        #expect(
            thirtyFirst.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-01-31", "2027-03-31", "2027-05-31", "2027-07-31",
            ])
        let leapDay = try Self.series("2028-02-29T10:00", Self.berlin, "FREQ=MONTHLY;INTERVAL=12;COUNT=3")
        #expect(
            leapDay.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2028-02-29", "2032-02-29", "2036-02-29",
            ])
        // A rule that never meets a date ends instead of running on.
        let never = try Self.series("2027-02-28T10:00", Self.berlin, "FREQ=MONTHLY;INTERVAL=12;BYMONTHDAY=30")
        #expect(never.occurrences(from: 0, to: .max / 8).map(\.date.description) == ["2027-02-28"])
    }

    @Test func untilCountIntervalsAndExceptions() throws {
        let untilLocal = try Self.series("2027-03-01T08:00", Self.berlin, "FREQ=DAILY;INTERVAL=2;UNTIL=20270307T080000")
        #expect(
            untilLocal.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-03-01", "2027-03-03", "2027-03-05", "2027-03-07",
            ])
        let untilUTC = try Self.series("2027-03-01T08:00", Self.berlin, "FREQ=DAILY;UNTIL=20270303T065959Z")
        #expect(untilUTC.occurrences(from: 0, to: .max / 8).count == 2)
        let untilDate = try Self.series(
            "2027-03-01T08:00", Self.berlin, "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;UNTIL=20270318")
        #expect(
            untilDate.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-03-01", "2027-03-04", "2027-03-15", "2027-03-18",
            ])
        // An exception leaves its date out and still counts toward COUNT.
        let counted = try Self.series("2027-03-01T08:00", Self.berlin, "FREQ=DAILY;COUNT=4", except: ["2027-03-02"])
        #expect(
            counted.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-03-01", "2027-03-03", "2027-03-04",
            ])
        #expect(counted.occurrence(on: LocalDate(parsing: "2027-03-02")!) == nil)
        #expect(counted.occurrence(on: LocalDate(parsing: "2027-03-03")!)?.local.description == "2027-03-03T08:00:00")
        let weekdays = try Self.series("2027-03-05T08:00", Self.berlin, "FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR;COUNT=3")
        #expect(
            weekdays.occurrences(from: 0, to: .max / 8).map(\.date.description) == [
                "2027-03-05", "2027-03-08", "2027-03-09",
            ])
    }

    @Test func aYearNineWeekOfATenYearDailySeriesComesWithoutWalkingFromTheStart() throws {
        let daily = try Self.series("2027-01-01T07:30", Self.berlin, "FREQ=DAILY")
        let week = Self.instants(daily, "2035-06-01T00:00:00Z", "2035-06-08T00:00:00Z")
        #expect(week.count == 7 && week.first == "2035-06-01T05:30:00Z" && week.last == "2035-06-07T05:30:00Z")
        #expect(daily.first(atOrAfter: Self.utc("2035-06-01T06:00:00Z"))?.date.description == "2035-06-02")
    }

    @Test func remindersCountCalendarDaysOnTheWallClockAndHoursExactly() throws {
        // The day after Berlin's spring change: 18:00 the day before is still 18:00, 23 hours earlier.
        let talk = try Self.series("2027-03-29T18:00", Self.berlin, nil)
        let occurrence = try #require(talk.first(atOrAfter: 0))
        #expect(Self.text(talk.instant(of: ISODuration(parsing: "P1D")!, before: occurrence)) == "2027-03-28T16:00:00Z")
        #expect(
            Self.text(talk.instant(of: ISODuration(parsing: "PT30M")!, before: occurrence)) == "2027-03-29T15:30:00Z")
        #expect(
            Self.text(talk.instant(of: ISODuration(parsing: "PT24H")!, before: occurrence)) == "2027-03-28T16:00:00Z")
        #expect(
            Self.text(talk.instant(of: ISODuration(parsing: "PT0S")!, before: occurrence)) == "2027-03-29T16:00:00Z")
    }
}

import Foundation
import HubTime
import Testing

/// A digest's time of day: parsed strictly, and the next instant it strikes on a zone's clock, across Berlin's
/// changes of clock.
@Suite("A time of day and its next instant")
struct DailyTimeTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    @Test func onlyTwoDigitHoursAndMinutesAreATime() {
        #expect(DailyTime(parsing: "17:00")?.description == "17:00")
        #expect(DailyTime(parsing: "07:05")?.description == "07:05")
        for bad in ["7:00", "24:00", "12:60", "12-00", "", "ab:cd", "١٢:٠٠"] {
            #expect(DailyTime(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func theNextInstantIsTodaysWhenToComeElseTomorrowsOnTheLocalClock() {
        let five = DailyTime(parsing: "17:00")!
        // 2027-03-27 10:00Z is 11:00 in Berlin (CET): today's 17:00 is 16:00Z.
        #expect(
            five.next(after: LocalDateTimeZoneTests.ms("2027-03-27T10:00:00Z"), in: Self.berlin)
                == LocalDateTimeZoneTests.ms("2027-03-27T16:00:00Z"))
        // Past it: tomorrow's, after the clocks went forward (CEST): 15:00Z.
        #expect(
            five.next(after: LocalDateTimeZoneTests.ms("2027-03-27T16:00:00Z"), in: Self.berlin)
                == LocalDateTimeZoneTests.ms("2027-03-28T15:00:00Z"))
        // A time the spring-forward night skips is the first valid one after it.
        let skipped = DailyTime(parsing: "02:30")!
        #expect(
            skipped.next(after: LocalDateTimeZoneTests.ms("2027-03-27T23:00:00Z"), in: Self.berlin)
                == LocalDateTimeZoneTests.ms("2027-03-28T01:00:00Z"))
    }
}

import DAO
import FCM
import Foundation
import HubModel
import HubTime
import Relay
import Testing

/// Unix ms of a UTC wall-clock time.
private func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int = 0) -> Int64 {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let date = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute))!
    return Int64(date.timeIntervalSince1970 * 1000)
}

private func hours(_ from: String, _ to: String, _ tz: String = "Europe/Berlin") throws -> QuietHours {
    try QuietHours.parse(from: from, to: to, tz: tz).get()
}

@Suite("Quiet hours")
struct QuietHoursTests {
    @Test(arguments: [
        ("24:00", "07:00", "Europe/Berlin"), ("7:00", "08:00", "Europe/Berlin"),
        ("22:60", "07:00", "Europe/Berlin"), ("22:00", "22:00", "Europe/Berlin"),
        ("22:00", "07:00", "Mars/Olympus"), ("22:00", "07:00", "CEST"), ("22:00", "07:00", ""),
        ("22:00", " 7:00", "Europe/Berlin"), ("２２:00", "07:00", "Europe/Berlin"),
    ])
    func aWindowThatIsNotTwoTimesInAKnownZoneIsRefused(from: String, to: String, tz: String) {
        #expect(throws: QuietHoursProblem.self) { try QuietHours.parse(from: from, to: to, tz: tz).get() }
    }

    @Test func equalWindowsHaveOneKey() throws {
        #expect(try hours("22:00", "07:00").key == "22:00-07:00-Europe/Berlin")
        #expect(try hours("22:00", "07:00") == hours("22:00", "07:00"))
        #expect(try hours("22:00", "07:00") != hours("22:00", "07:00", "Europe/Paris"))
        #expect(try hours("00:00", "23:59", "UTC").key == "00:00-23:59-UTC")
    }

    @Test func aWindowAcrossMidnightHoldsFromItsStartToItsEndOnTheLocalClock() throws {
        let night = try hours("22:00", "07:00")  // Berlin in January: UTC+1
        #expect(!night.isQuiet(at: utc(2026, 1, 15, 20, 59)))  // 21:59
        #expect(night.isQuiet(at: utc(2026, 1, 15, 21, 0)))  // 22:00
        #expect(night.isQuiet(at: utc(2026, 1, 15, 23, 30)))  // 00:30
        #expect(night.isQuiet(at: utc(2026, 1, 16, 5, 59)))  // 06:59
        #expect(!night.isQuiet(at: utc(2026, 1, 16, 6, 0)))  // 07:00
        #expect(night.end(after: utc(2026, 1, 15, 21, 30)) == utc(2026, 1, 16, 6, 0))
        #expect(night.end(after: utc(2026, 1, 16, 1, 0)) == utc(2026, 1, 16, 6, 0))
    }

    @Test func aWindowWithinADayHoldsBetweenItsTimes() throws {
        let school = try hours("09:00", "15:30", "America/New_York")  // UTC-5 in January
        #expect(!school.isQuiet(at: utc(2026, 1, 15, 13, 59)))
        #expect(school.isQuiet(at: utc(2026, 1, 15, 14, 0)))
        #expect(!school.isQuiet(at: utc(2026, 1, 15, 20, 30)))
        #expect(school.end(after: utc(2026, 1, 15, 14, 0)) == utc(2026, 1, 15, 20, 30))
    }

    @Test func theWindowFollowsTheClocksWhenTheyGoForwardAndBack() throws {
        let night = try hours("22:00", "07:00")
        // 29 March 2026: 02:00 CET becomes 03:00 CEST; the night ends at 07:00 CEST, 05:00 UTC.
        #expect(night.isQuiet(at: utc(2026, 3, 28, 22, 0)))
        #expect(night.end(after: utc(2026, 3, 28, 22, 0)) == utc(2026, 3, 29, 5, 0))
        #expect(night.isQuiet(at: utc(2026, 3, 29, 4, 59)) && !night.isQuiet(at: utc(2026, 3, 29, 5, 0)))
        // 25 October 2026: 03:00 CEST becomes 02:00 CET; the night ends at 07:00 CET, 06:00 UTC.
        #expect(night.end(after: utc(2026, 10, 24, 21, 0)) == utc(2026, 10, 25, 6, 0))
        #expect(night.isQuiet(at: utc(2026, 10, 25, 5, 59)) && !night.isQuiet(at: utc(2026, 10, 25, 6, 0)))
    }

    @Test func aWindowEndingInTheSkippedHourEndsWhenTheClocksJump() throws {
        let night = try hours("22:00", "02:30")
        // 02:30 does not exist on 29 March 2026 in Berlin: the window ends at the jump, 01:00 UTC (03:00 CEST).
        let end = night.end(after: utc(2026, 3, 28, 22, 0))
        #expect(end == utc(2026, 3, 29, 1, 0))
        #expect(!night.isQuiet(at: end) && night.isQuiet(at: end - 60_000))
    }

    @Test func passiveAndActiveMessagesWaitForTheEndAndUrgentOnesDoNot() throws {
        let night = try hours("22:00", "07:00")
        let quiet = utc(2026, 1, 15, 23, 0), awake = utc(2026, 1, 15, 12, 0)
        let end = utc(2026, 1, 16, 6, 0)
        #expect(QuietHoursPolicy.deferral(for: .passive, quietHours: night, now: quiet) == end)
        #expect(QuietHoursPolicy.deferral(for: .active, quietHours: night, now: quiet) == end)
        #expect(QuietHoursPolicy.deferral(for: .timeSensitive, quietHours: night, now: quiet) == nil)
        #expect(QuietHoursPolicy.deferral(for: .critical, quietHours: night, now: quiet) == nil)
        #expect(QuietHoursPolicy.deferral(for: .active, quietHours: night, now: awake) == nil)
        #expect(QuietHoursPolicy.deferral(for: .passive, quietHours: nil, now: quiet) == nil)
    }

    @Test func aTopicMessageLeavesOutTheFourBiggestQuietWindowsAndNoMore() throws {
        let now = utc(2026, 1, 15, 23, 0)  // midnight in Berlin
        var windows = try (1...6).map { index in
            QuietWindow(topic: "quiet-\(index)", quietHours: try hours("22:00", "0\(index):00"), devices: index * 10)
        }
        windows.append(QuietWindow(topic: "quiet-day", quietHours: try hours("09:00", "15:00"), devices: 1_000))
        windows.append(QuietWindow(topic: "quiet-empty", quietHours: try hours("23:00", "06:00"), devices: 0))
        let (excluded, overflow) = QuietHoursPolicy.exclusions(for: .active, windows: windows, now: now)
        #expect(excluded.map(\.topic) == ["quiet-6", "quiet-5", "quiet-4", "quiet-3"])
        // The devices of these quiet windows cannot be left out of one condition: they get the message at once.
        #expect(overflow.map(\.topic) == ["quiet-2", "quiet-1"])
        let urgent = QuietHoursPolicy.exclusions(for: .timeSensitive, windows: windows, now: now)
        #expect(urgent.excluded.isEmpty && urgent.overflow.isEmpty)
        #expect(QuietHoursPolicy.exclusions(for: .passive, windows: windows, now: now).excluded.count == 4)
    }
}

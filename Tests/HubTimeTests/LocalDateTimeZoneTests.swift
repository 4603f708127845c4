import Foundation
import HubTime
import Testing

/// A wall-clock time and an instant in a zone, both ways (the portal's "send at" and the events pages use them, as
/// the schedules do), and the zones the hub accepts. Expected instants written out by hand in UTC.
@Suite("Wall-clock times and instants in a zone")
struct LocalDateTimeZoneTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func time(_ text: String) -> LocalDateTime { LocalDateTime(parsing: text)! }
    static func ms(_ iso: String) -> Int64 {
        Int64(ISO8601DateFormatter().date(from: iso)!.timeIntervalSince1970 * 1000)
    }

    @Test func aTimeAndItsInstantGoBothWaysAcrossBerlinsChanges() {
        // Winter (UTC+1), summer (UTC+2), the skipped 02:30 of 2027-03-28 (03:00 CEST), the repeated 02:30 of
        // 2027-10-31 (the first, CEST).
        let cases: [(String, String)] = [
            ("2027-01-15T09:00:00", "2027-01-15T08:00:00Z"), ("2027-07-01T18:30:00", "2027-07-01T16:30:00Z"),
            ("2027-03-28T02:30:00", "2027-03-28T01:00:00Z"), ("2027-10-31T02:30:00", "2027-10-31T00:30:00Z"),
        ]
        for (local, utc) in cases {
            #expect(Self.time(local).instant(in: Self.berlin) == Self.ms(utc), "\(local)")
        }
        // Back from the instant: the wall clock, and the skipped time shows as the time it moved to.
        #expect(
            LocalDateTime(instant: Self.ms("2027-01-15T08:00:00Z"), in: Self.berlin).description
                == "2027-01-15T09:00:00")
        #expect(
            LocalDateTime(instant: Self.ms("2027-03-28T01:00:00Z"), in: Self.berlin).description
                == "2027-03-28T03:00:00")
        #expect(
            LocalDateTime(instant: Self.ms("2027-10-31T01:30:00Z"), in: Self.berlin).description
                == "2027-10-31T02:30:00")
        // Before 1970 and at midnight.
        #expect(LocalDateTime(instant: -1, in: TimeZone(identifier: "UTC")!).description == "1969-12-31T23:59:59")
        #expect(
            LocalDateTime(instant: Self.ms("2026-12-31T23:00:00Z"), in: Self.berlin).description
                == "2027-01-01T00:00:00")
    }

    @Test func onlyIANANamesAreZones() {
        for name in ["Europe/Berlin", "America/New_York", "UTC", "Asia/Kolkata"] {
            #expect(IANAZone.named(name) != nil, "\(name)")
        }
        for name in ["CEST", "GMT+2", "Mars/Olympus", "", String(repeating: "A/", count: 40)] {
            #expect(IANAZone.named(name) == nil, "\(name)")
        }
    }
}

import Foundation
import HubTime

/// Times on the school's wall clock (`SCHOOL_TIME_ZONE`): what the send form's "send at" and the events pages read
/// from a `datetime-local` field and show. `LocalDateTime` converts; this adds the form's shape and words.
struct SchoolTime: Sendable {
    let zone: TimeZone

    /// The zone's name as the pages show it beside a time ("Europe/Berlin").
    var name: String { zone.identifier }

    /// A `datetime-local` value ("2027-03-01T08:00", seconds optional) read on the school's wall clock, as Unix ms;
    /// nil when it is not one. A time the clocks skip is the first valid time after it.
    func instant(ofField text: String) -> Int64? {
        LocalDateTime(parsing: text).map { $0.instant(in: zone) }
    }

    /// The `datetime-local` value of instant `ms` on the school's wall clock ("2027-03-01T08:00").
    func field(_ ms: Int64) -> String {
        String(LocalDateTime(instant: ms, in: zone).description.prefix(16))
    }

    /// Instant `ms` as the pages show it: "2027-03-01 08:00 (Europe/Berlin)".
    func text(_ ms: Int64) -> String {
        field(ms).replacingOccurrences(of: "T", with: " ") + " (\(name))"
    }
}

import Foundation

/// The time zones the hub accepts: IANA names Foundation's zone database knows ("Europe/Berlin", "UTC"), never an
/// abbreviation or an offset ("CEST", "GMT+2"), which name no daylight-saving rules. The one rule for a device's quiet
/// hours, an event's `tz` and `SCHOOL_TIME_ZONE`.
public enum IANAZone {
    /// The zone named `identifier`, or nil when it is not a known IANA name.
    public static func named(_ identifier: String) -> TimeZone? {
        guard (1...64).contains(identifier.utf8.count), let zone = TimeZone(identifier: identifier) else { return nil }
        // An Area/Location name the zone database reads (Foundation's list of known names misses some, such as
        // Asia/Kolkata on Linux), or UTC; abbreviations and offsets have no slash.
        return identifier == "UTC" || identifier.contains("/") ? zone : nil
    }
}

import Foundation
import HubTime

/// When a person's daily digest goes out: at their `digest_hour`, else the school's `DIGEST_HOUR`, on the clock of
/// their zone (their quiet hours' zone, else the school's `SCHOOL_TIME_ZONE`). The one reading of those settings for
/// the hub (which plans a digest when a person chooses one) and the relay (which plans the next after sending).
public struct DigestPolicy: Sendable {
    /// `DIGEST_HOUR`: the time of the digests of persons who chose none.
    public let defaultHour: DailyTime
    /// `SCHOOL_TIME_ZONE`: the zone of persons without quiet hours.
    public let schoolZone: TimeZone

    /// The default: 17:00 UTC.
    public static let standard = DigestPolicy(
        defaultHour: DailyTime(parsing: "17:00")!, schoolZone: TimeZone(identifier: "UTC")!)

    public init(defaultHour: DailyTime, schoolZone: TimeZone) {
        self.defaultHour = defaultHour
        self.schoolZone = schoolZone
    }

    /// Whether `settings` hold any subject or group in digest mode.
    public func wantsDigest(_ settings: PersonSettings) -> Bool {
        settings.delivery.values.contains { $0.values.contains(.digest) }
    }

    /// The zone the person's day is read in.
    public func zone(of settings: PersonSettings) -> TimeZone {
        settings.quietHours.flatMap { IANAZone.named($0.timeZoneID) } ?? schoolZone
    }

    /// The time of the person's digest.
    public func hour(of settings: PersonSettings) -> DailyTime {
        settings.digestHour.flatMap(DailyTime.init(parsing:)) ?? defaultHour
    }

    /// The first digest time of the person after `now` (Unix ms).
    public func nextDue(after now: Int64, for settings: PersonSettings) -> Int64 {
        hour(of: settings).next(after: now, in: zone(of: settings))
    }
}

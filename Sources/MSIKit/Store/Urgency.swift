/// How urgently the sender wants a message to reach a person: the hub's `urgency` (`passive`, `active`,
/// `time-sensitive`, `critical`; `active` when it sent none). The hub maps it onto each platform; the app must
/// declare what the mapping names, or the phone falls back to an ordinary notification.
///
/// **Android.** The hub sends active and more urgent messages at priority `HIGH` (passive ones `NORMAL`), each on a
/// notification channel named by its urgency. By default the channel ids are `msi_passive`, `msi_active`,
/// `msi_time_sensitive` and `msi_critical`; a hub may name others (`ANDROID_CHANNEL_PASSIVE`, `_ACTIVE`,
/// `_TIME_SENSITIVE`, `_CRITICAL`), and the app must then use those. The app creates the four channels at start
/// (`NotificationChannel`), with importance matching the urgency: `IMPORTANCE_LOW` for passive, `IMPORTANCE_DEFAULT`
/// for active, `IMPORTANCE_HIGH` for time-sensitive and critical (critical ideally also bypassing Do Not Disturb,
/// `setBypassDnd(true)`, which the person must allow). A notification on a channel the app did not create is dropped
/// by Android 8 and later.
///
/// **iOS.** The hub sends APNs' `interruption-level` (and a `relevance-score`): `passive`, `active`,
/// `time-sensitive`, or `critical` with the critical sound. `time-sensitive` needs the app's **Time Sensitive
/// Notifications** capability (`com.apple.developer.usernotifications.time-sensitive`). `critical` needs Apple's
/// **critical alerts entitlement** (`com.apple.developer.usernotifications.critical-alerts`, granted by Apple on
/// request) and the person's consent (`requestAuthorization(options: [.criticalAlert, ...])`); the hub sends
/// critical as such only once its operator sets `APNS_CRITICAL_ALERTS=true`, and as time-sensitive before that, so
/// set it only for an app that holds the entitlement.
///
/// A struct rather than an enum so that a level this version does not know survives a round trip.
public struct Urgency: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The value as the hub sends it.
    public var rawValue: String
    /// Wraps a stored or received value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Into the notification list quietly, without lighting the screen (Android channel `msi_passive`).
    public static let passive = Urgency(rawValue: "passive")
    /// An ordinary notification: the hub's default (Android channel `msi_active`).
    public static let active = Urgency(rawValue: "active")
    /// Breaks through Focus modes and the device's quiet hours (Android channel `msi_time_sensitive`).
    public static let timeSensitive = Urgency(rawValue: "time-sensitive")
    /// Sounds even when the phone is muted, where the app may (Android channel `msi_critical`).
    public static let critical = Urgency(rawValue: "critical")

    /// The hub's default Android notification channel id for this urgency (`msi_` and the level, `-` as `_`).
    public var defaultAndroidChannelID: String { "msi_" + String(rawValue.map { $0 == "-" ? "_" : $0 }) }

    /// The raw value.
    public var description: String { rawValue }
}

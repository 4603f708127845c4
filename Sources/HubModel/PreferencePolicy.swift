/// Whether a message goes past what its recipients chose (quiet hours, a daily digest, a subject or group turned
/// `off`, a room muted): the one rule every sender of the relay asks, so that an emergency reaches everyone at once.
///
/// Time-sensitive and critical messages go through, and so do those stored with `override_preferences` (an admin's
/// choice on the message, and every Alert of a Forced subject, which the hub marks so when it stores it).
public enum PreferencePolicy {
    /// Whether a message of `urgency`, marked `overridePreferences` or not, ignores every preference.
    public static func breaksThrough(urgency: Urgency, overridePreferences: Bool) -> Bool {
        !urgency.waitsForQuietHours || overridePreferences
    }
}

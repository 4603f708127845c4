import DAO
import FCM
import HubModel
import HubTime

/// When a message may reach a device with quiet hours, the one rule of the relay's sends (topic and per-device):
/// a message that yields to preferences waits until the device's window ends; one that breaks through them
/// (`PreferencePolicy`: time-sensitive, critical, `override_preferences`) goes at once.
/// A catch-up is not held back: what the app asks for it shows at once.
public enum QuietHoursPolicy {
    /// When to send a message of `urgency` to a device with `quietHours` at `now` (Unix ms): nil to send now (no
    /// quiet hours, not quiet now, or urgent enough), else the end of the device's window.
    public static func deferral(
        for urgency: RelayMessage.Urgency, overridePreferences: Bool = false, quietHours: QuietHours?, now: Int64
    ) -> Int64? {
        guard let quietHours,
            !PreferencePolicy.breaksThrough(urgency: urgency, overridePreferences: overridePreferences),
            quietHours.isQuiet(at: now)
        else { return nil }
        return quietHours.end(after: now)
    }

    /// The windows a topic message of `urgency` leaves out at `now`: of `windows` (those some device has), the quiet
    /// ones, the most devices first, at most `FCMMapping.maximumExcludedTopics` of them (`excluded`: their devices
    /// are sent to by token when their window ends); the quiet windows beyond that cannot be left out of one FCM
    /// condition, so their devices get the message at once (`overflow`). None for one that breaks through preferences.
    /// `limit` is one less when the message's condition also leaves out a held topic (`FCMMapping.requests`).
    public static func exclusions(
        for urgency: RelayMessage.Urgency, overridePreferences: Bool = false, windows: [QuietWindow], now: Int64,
        limit: Int = FCMMapping.maximumExcludedTopics
    ) -> (excluded: [QuietWindow], overflow: [QuietWindow]) {
        guard !PreferencePolicy.breaksThrough(urgency: urgency, overridePreferences: overridePreferences) else {
            return ([], [])
        }
        let quiet = windows.filter { $0.devices > 0 && $0.quietHours.isQuiet(at: now) }
            .sorted { ($0.devices, $1.topic) > ($1.devices, $0.topic) }
        return (Array(quiet.prefix(limit)), Array(quiet.dropFirst(limit)))
    }
}

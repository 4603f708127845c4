import FCM

/// How a message's urgency reaches the platforms: whether APNs may be asked for critical alerts
/// (`APNS_CRITICAL_ALERTS`) and the Android notification channel of each urgency (`ANDROID_CHANNEL_PASSIVE`,
/// `ANDROID_CHANNEL_ACTIVE`, `ANDROID_CHANNEL_TIME_SENSITIVE`, `ANDROID_CHANNEL_CRITICAL`).
public struct UrgencyConfiguration: Sendable {
    /// The app has Apple's critical-alert entitlement: critical messages are sent to APNs as critical.
    public var criticalAlerts = false
    /// The channel ids the app creates, one per urgency.
    public var androidChannels = FCMMappingOptions.AndroidChannels()

    public init() {}

    /// The configuration the environment gives.
    /// - Throws: `ConfigurationError` when `APNS_CRITICAL_ALERTS` is neither true nor false, or a channel id is not
    ///   1 to 100 visible ASCII characters.
    static func fromEnvironment(_ environment: [String: String]) throws -> UrgencyConfiguration {
        var urgency = UrgencyConfiguration()
        if let value = environment["APNS_CRITICAL_ALERTS"], !value.isEmpty {
            switch value.lowercased() {
            case "1", "true", "yes": urgency.criticalAlerts = true
            case "0", "false", "no": urgency.criticalAlerts = false
            default: throw ConfigurationError("APNS_CRITICAL_ALERTS must be true or false, not \"\(value)\"")
            }
        }
        // Each read by its name, so that scripts/check-compose.py finds every variable the hub reads.
        let channels:
            [(name: String, value: String?, path: WritableKeyPath<FCMMappingOptions.AndroidChannels, String>)] = [
                ("ANDROID_CHANNEL_PASSIVE", environment["ANDROID_CHANNEL_PASSIVE"], \.passive),
                ("ANDROID_CHANNEL_ACTIVE", environment["ANDROID_CHANNEL_ACTIVE"], \.active),
                ("ANDROID_CHANNEL_TIME_SENSITIVE", environment["ANDROID_CHANNEL_TIME_SENSITIVE"], \.timeSensitive),
                ("ANDROID_CHANNEL_CRITICAL", environment["ANDROID_CHANNEL_CRITICAL"], \.critical),
            ]
        for (name, value, path) in channels {
            guard let value, !value.isEmpty else { continue }
            guard value.utf8.count <= 100, value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw ConfigurationError("\(name) must be an Android channel id: 1 to 100 visible ASCII characters")
            }
            urgency.androidChannels[keyPath: path] = value
        }
        return urgency
    }

    /// `options` with this configuration's critical alerts and channels.
    func applied(to options: FCMMappingOptions) -> FCMMappingOptions {
        var options = options
        options.criticalAlerts = criticalAlerts
        options.androidChannels = androidChannels
        return options
    }
}

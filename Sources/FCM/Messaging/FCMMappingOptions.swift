import HubModel
/// The choices the mapping leaves to configuration.
public struct FCMMappingOptions: Sendable, Hashable {
    /// FCM's strictest documented payload limit for topic messages.
    public static let defaultPayloadLimit = 2048
    /// FCM's longest time to live, 4 weeks; longer ttls are sent as this.
    public static let maximumTTLSeconds: Int64 = 2_419_200

    /// Sets `validate_only`: FCM checks the request and sends nothing (`FCM_MODE=validate`).
    public var validateOnly: Bool
    /// The most payload bytes a request may carry: the compact JSON of its `data` object plus that of its
    /// `notification` object, as UTF-8. Over it, text is cut at a character boundary.
    public var payloadLimit: Int
    /// Whether the app has Apple's critical-alert entitlement (`APNS_CRITICAL_ALERTS`): only then is a critical
    /// message sent to APNs as critical (its sound plays on a muted phone); otherwise as time-sensitive.
    public var criticalAlerts: Bool
    /// The Android notification channel of each urgency (`ANDROID_CHANNEL_*`), which the app must create.
    public var androidChannels: AndroidChannels

    /// Options; the defaults send for real with a 2048-byte payload limit, without critical alerts, on the
    /// default channels.
    public init(
        validateOnly: Bool = false, payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit,
        criticalAlerts: Bool = false, androidChannels: AndroidChannels = AndroidChannels()
    ) {
        self.validateOnly = validateOnly
        self.payloadLimit = payloadLimit
        self.criticalAlerts = criticalAlerts
        self.androidChannels = androidChannels
    }

    /// The ids of the Android notification channels an Alert is shown on, one per urgency: the app creates them
    /// (with the importance each deserves) before the first message arrives; an unknown id falls back to the
    /// app's default channel.
    public struct AndroidChannels: Sendable, Hashable {
        /// `ANDROID_CHANNEL_PASSIVE`, default `msi_passive`.
        public var passive: String
        /// `ANDROID_CHANNEL_ACTIVE`, default `msi_active`.
        public var active: String
        /// `ANDROID_CHANNEL_TIME_SENSITIVE`, default `msi_time_sensitive`.
        public var timeSensitive: String
        /// `ANDROID_CHANNEL_CRITICAL`, default `msi_critical`.
        public var critical: String

        /// The channels; the defaults are the ids MSIKit's documentation tells apps to create.
        public init(
            passive: String = "msi_passive", active: String = "msi_active",
            timeSensitive: String = "msi_time_sensitive", critical: String = "msi_critical"
        ) {
            self.passive = passive
            self.active = active
            self.timeSensitive = timeSensitive
            self.critical = critical
        }

        /// The channel of `urgency`.
        public subscript(urgency: RelayMessage.Urgency) -> String {
            switch urgency {
            case .passive: passive
            case .active: active
            case .timeSensitive: timeSensitive
            case .critical: critical
            }
        }
    }
}

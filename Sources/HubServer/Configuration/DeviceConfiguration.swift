import HubTime
import DAO
/// How the hub registers devices and applies their subscriptions at FCM.
public struct DeviceConfiguration: Sendable {
    /// When set, `POST /device` needs it in `X-App-Key` (`DEVICE_REGISTRATION_KEY`): the shared key of the
    /// school's app, so that only it registers devices.
    public var registrationKey: String?
    /// Registrations one address may make per minute (`DEVICE_REGISTRATIONS_PER_MINUTE`): a school's students
    /// often share one address, so the default is generous; it stops a script, not a classroom.
    public var registrationsPerMinute: Int
    /// Posts one person may make to rooms a minute, all replicas together (`ROOM_POSTS_PER_MINUTE`).
    public var roomPostsPerMinute: Int = 30
    /// Whether the hub counts each person's unread messages (`UNREAD_COUNTS`, `on` or `off`): the badge and
    /// `unread` of every per-device send, a room's "3 new messages", the read notices and `GET
    /// /device/:deviceID/unread`. Off by default: on the embedded database the counting costs the fan-out about a
    /// database update a person reached (see the README), and it changes what existing apps receive.
    public var countsUnread = false
    /// When the daily digests of persons who chose no time of their own go out (`DIGEST_HOUR`, "HH:MM" on each
    /// person's clock: their quiet hours' zone, else `SCHOOL_TIME_ZONE`); default 17:00.
    public var digestHour = DigestPolicy.standard.defaultHour
    /// Topic subscription calls per second, all replicas together (`FCM_SUBSCRIPTION_RATE`); Google allows 3,000.
    public var subscriptionRate: Int
    /// How long a device FCM calls unregistered is kept before it is removed (`DEVICE_RETENTION_DAYS`).
    public var retention: Duration
    /// How often every device's subscriptions are compared with FCM's and drift repaired
    /// (`DEVICE_REPAIR_HOURS`; 0: never).
    public var repairInterval: Duration?

    public init(
        registrationKey: String? = nil, registrationsPerMinute: Int = 600, subscriptionRate: Int = 3_000,
        retention: Duration = .seconds(30 * 86_400),
        repairInterval: Duration? = .seconds(24 * 3600)
    ) {
        self.registrationKey = registrationKey
        self.registrationsPerMinute = registrationsPerMinute
        self.subscriptionRate = subscriptionRate
        self.retention = retention
        self.repairInterval = repairInterval
    }

    /// The device configuration the environment gives.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    static func fromEnvironment(_ environment: [String: String]) throws -> DeviceConfiguration {
        var devices = DeviceConfiguration()
        if let key = environment["DEVICE_REGISTRATION_KEY"], !key.isEmpty { devices.registrationKey = key }
        if let value = try environment.number("DEVICE_REGISTRATIONS_PER_MINUTE", in: 1...1_000_000) {
            devices.registrationsPerMinute = value
        }
        switch environment["UNREAD_COUNTS"]?.lowercased() {
        case nil, "", "off", "false": break
        case "on", "true": devices.countsUnread = true
        case let value?:
            throw ConfigurationError("UNREAD_COUNTS must be on or off, not \"\(value)\"")
        }
        if let value = environment["DIGEST_HOUR"], !value.isEmpty {
            guard let hour = DailyTime(parsing: value) else {
                throw ConfigurationError(
                    "DIGEST_HOUR must be a time of day \"HH:MM\" (00:00 to 23:59), not \"\(value)\"")
            }
            devices.digestHour = hour
        }
        if let value = try environment.number("ROOM_POSTS_PER_MINUTE", in: 1...10_000) {
            devices.roomPostsPerMinute = value
        }
        if let value = try environment.number("FCM_SUBSCRIPTION_RATE", in: 1...100_000) {
            devices.subscriptionRate = value
        }
        if let value = try environment.number("DEVICE_RETENTION_DAYS", in: 1...3650) {
            devices.retention = .seconds(value * 86_400)
        }
        if let value = try environment.number("DEVICE_REPAIR_HOURS", in: 0...(24 * 365)) {
            devices.repairInterval = value == 0 ? nil : .seconds(value * 3600)
        }
        return devices
    }
}

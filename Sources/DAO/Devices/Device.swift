import HubTime
import Mongo

/// The platforms a device may register from.
public enum Platform: String, Sendable, CaseIterable, Codable {
    case ios, android, web
}

/// A phone (or browser) registered with the hub: its FCM registration and how it authenticates.
///
/// The registration token is a credential of the phone: it is stored to call FCM for the device, and never
/// listed or logged (`description` leaves it out).
public struct Device: Sendable, CustomStringConvertible {
    /// Whether FCM still knows the registration.
    public enum State: String, Sendable {
        case active
        /// FCM answered `UNREGISTERED` (404): the app was removed or the token expired. Removed after
        /// `DEVICE_RETENTION_DAYS` unless it registers again.
        case unregistered
    }

    public var id: ObjectID
    /// The FCM registration token or Firebase installation id.
    public var registration: String
    public var platform: Platform
    public var locale: String?
    public var appVersion: String?
    public var state: State
    /// The hash of the device's secret (`Secret.hash`).
    public var secretHash: String
    /// Unix ms.
    public var createdAt: Int64
    /// When the device last registered again or changed (Unix ms; its creation when never).
    public var updatedAt: Int64
    /// The person the device is bound to (an opaque id from the school's sign-in), if any.
    public var person: String?
    /// When passive and active messages wait for this device (`quiet_hours`), if it set quiet hours.
    public var quietHours: QuietHours?
    /// The server-owned FCM topic of its quiet hours' window (`quiet_hours.topic`), which topic messages sent while
    /// the window is quiet leave out.
    public var quietTopic: String?

    /// Reads a stored device; nil when the document is not one.
    public init?(document: BSONDocument) {
        guard let id = document.objectID("_id"), let platform = Platform(rawValue: document.string("platform")),
            let registration = document["registration"]?.stringValue
        else { return nil }
        self.id = id
        self.registration = registration
        self.platform = platform
        self.locale = document["locale"]?.stringValue
        self.appVersion = document["app_version"]?.stringValue
        self.state = State(rawValue: document.string("state")) ?? .active
        self.secretHash = document.string("secret_hash")
        self.createdAt = document["created_at"]?.int64Value ?? 0
        self.updatedAt = document["updated_at"]?.int64Value ?? createdAt
        self.person = document["person"]?.stringValue
        if let quiet = document["quiet_hours"]?.documentValue,
            case .success(let hours) = QuietHours.parse(
                from: quiet.string("from"), to: quiet.string("to"),
                tz: quiet.string("tz"))
        {
            self.quietHours = hours
            self.quietTopic = quiet["topic"]?.stringValue
        }
    }

    /// Names the device by id only: the registration is a credential.
    public var description: String { "Device(\(id.hex), \(platform.rawValue), \(state.rawValue))" }
}

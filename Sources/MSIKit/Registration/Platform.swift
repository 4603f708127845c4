/// The kind of device the hub registers: it decides how the hub shapes pushes for it.
public struct Platform: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The value the hub expects: "ios", "android" or "web".
    public var rawValue: String
    /// Wraps a value the hub knows.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An iPhone or iPad (APNs through FCM).
    public static let ios = Platform(rawValue: "ios")
    /// An Android device.
    public static let android = Platform(rawValue: "android")
    /// A web push client.
    public static let web = Platform(rawValue: "web")

    /// The raw value.
    public var description: String { rawValue }
}

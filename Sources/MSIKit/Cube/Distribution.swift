/// How a subject's messages are distributed (a subject's `opt.distribution`, a message's `dist`).
///
/// A struct rather than an enum so that a value this version does not know survives a round trip.
public struct Distribution: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The value as stored and sent: "Alert" or "Information".
    public var rawValue: String
    /// Wraps a stored or received value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A push notification and the message in the app.
    public static let alert = Distribution(rawValue: "Alert")
    /// The message in the app only, delivered silently.
    public static let information = Distribution(rawValue: "Information")

    /// The raw value.
    public var description: String { rawValue }
}

/// How optional a subscription is (a subject's `opt.level`).
///
/// A struct rather than an enum so that a value this version does not know survives a round trip.
public struct Level: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The value as stored and sent: "Forced", "Recommended" or "".
    public var rawValue: String
    /// Wraps a stored or received value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Every device is subscribed at initialisation and cannot unsubscribe.
    public static let forced = Level(rawValue: "Forced")
    /// Every device is subscribed at initialisation and may unsubscribe.
    public static let recommended = Level(rawValue: "Recommended")
    /// The default (""): a device is not subscribed unless its user subscribes.
    public static let optIn = Level(rawValue: "")

    /// Whether initialisation subscribes a device to subjects of this level (Forced and Recommended).
    public var isAutomatic: Bool { self == .forced || self == .recommended }

    /// The raw value.
    public var description: String { rawValue }
}

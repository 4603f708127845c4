/// Who a message to persons or groups reached this device as: the person it is bound to, or a member of a group.
///
/// A struct rather than an enum so that a value this version does not know survives a round trip. A message sent to
/// a subject has none (its `topicKey` says where it came from).
public struct Audience: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The value as the hub sends it: "person" or "group".
    public var rawValue: String
    /// Wraps a stored or received value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Sent to the device's person directly.
    public static let person = Audience(rawValue: "person")
    /// Sent to a group the device's person is a member of (the message's `groupID` names it).
    public static let group = Audience(rawValue: "group")

    /// The raw value.
    public var description: String { rawValue }
}

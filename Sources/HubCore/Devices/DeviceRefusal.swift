/// Why a device's request was refused: a code each adapter maps once.
public typealias DeviceRefusal = Refusal<DeviceRefusalCode>

/// The codes of a `DeviceRefusal`.
public struct DeviceRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case unauthenticated, deviceNotFound, topicNotFound, forcedSubscription, invalidRegistration, registrationTaken
        case invalidQuietHours
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// No device secret, or not this device's.
    public static let unauthenticated = DeviceRefusalCode(.unauthenticated)
    /// No device has the id.
    public static let deviceNotFound = DeviceRefusalCode(.deviceNotFound)
    /// No subject has the topic key.
    public static let topicNotFound = DeviceRefusalCode(.topicNotFound)
    /// The subject is Forced: a device cannot leave it.
    public static let forcedSubscription = DeviceRefusalCode(.forcedSubscription)
    /// The registration is not one FCM could have made.
    public static let invalidRegistration = DeviceRefusalCode(.invalidRegistration)
    /// Another device has the registration.
    public static let registrationTaken = DeviceRefusalCode(.registrationTaken)

    /// `quiet_hours` is not `{"from": "HH:MM", "to": "HH:MM", "tz": IANA zone}` with two different times.
    public static let invalidQuietHours = DeviceRefusalCode(.invalidQuietHours)

    public var description: String { value.rawValue }
}

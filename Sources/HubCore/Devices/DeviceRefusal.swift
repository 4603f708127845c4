/// Why a device's request was refused: a code each adapter maps once.
public struct DeviceRefusal: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String {
            case unauthenticated, deviceNotFound, topicNotFound, forcedSubscription, invalidRegistration, registrationTaken
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// No device secret, or not this device's.
        public static let unauthenticated = Code(.unauthenticated)
        /// No device has the id.
        public static let deviceNotFound = Code(.deviceNotFound)
        /// No subject has the topic key.
        public static let topicNotFound = Code(.topicNotFound)
        /// The subject is Forced: a device cannot leave it.
        public static let forcedSubscription = Code(.forcedSubscription)
        /// The registration is not one FCM could have made.
        public static let invalidRegistration = Code(.invalidRegistration)
        /// Another device has the registration.
        public static let registrationTaken = Code(.registrationTaken)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for a person (never quotes a registration token).
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "DeviceRefusal.\(code): \(message)" }
}

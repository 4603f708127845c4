/// Why a message was not sent: a code each adapter (POST /message, the portal's send form) maps once.
public struct SendRefusal: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case topicNotFound, distributionMismatch, alertNeedsDesc, accessDenied, idempotencyKeyReused }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// No subject has the topic key.
        public static let topicNotFound = Code(.topicNotFound)
        /// The message's distribution is not its subject's.
        public static let distributionMismatch = Code(.distributionMismatch)
        /// An Alert needs a `desc`: it is the push notification's body.
        public static let alertNeedsDesc = Code(.alertNeedsDesc)
        /// The sender is not on an access list on the way down to the subject.
        public static let accessDenied = Code(.accessDenied)
        /// The sender used the `Idempotency-Key` for another submission within its lifetime.
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for a person.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "SendRefusal.\(code): \(message)" }
}

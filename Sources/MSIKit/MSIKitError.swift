/// Any failure of MSIKit: the network, the hub's refusals, the local database, or bad input.
///
/// Apps switch on `code` (`error.code == .forcedSubscription`), never on `message`.
/// `description` names the code only: the message may quote a hub's text or a payload.
public struct MSIKitError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; new codes can be added without breaking apps that compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case network, hub(status: Int, code: String), invalidResponse, database, invalidPayload
            case invalidArgument, notRegistered, cancelled, pushProvider
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The hub could not be reached, or the connection broke.
        public static let network = Code(.network)
        /// The hub answered `status` with the error body's `code` (an empty `code` when the body had none).
        public static func hub(status: Int, code: String) -> Code { Code(.hub(status: status, code: code)) }
        /// The hub refused the device's secret (401 `unauthenticated`).
        public static let unauthenticated = hub(status: 401, code: "unauthenticated")
        /// The topic is Forced: the hub refuses to unsubscribe from it (409 `forced_subscription`).
        public static let forcedSubscription = hub(status: 409, code: "forced_subscription")
        /// The hub refused a person assertion (401 `invalid_assertion`): it does not verify, or the hub binds no
        /// persons; the message gives the hub's reason.
        public static let invalidAssertion = hub(status: 401, code: "invalid_assertion")
        /// The hub refused a person assertion that has bound a device already (401 `assertion_replayed`): each binds
        /// once; ask the sign-in for a new one.
        public static let assertionReplayed = hub(status: 401, code: "assertion_replayed")
        /// The hub knows no subject with this topic key (404 `topic_not_found`).
        public static let topicNotFound = hub(status: 404, code: "topic_not_found")
        /// The device is bound to no person, so it has no person's settings: bind it first.
        public static let notBound = hub(status: 409, code: "not_bound")
        /// The hub answered something this library cannot read (an unexpected status or body).
        public static let invalidResponse = Code(.invalidResponse)
        /// The local SQLite database failed.
        public static let database = Code(.database)
        /// A push payload lacks a field or has one in the wrong form.
        public static let invalidPayload = Code(.invalidPayload)
        /// An argument is not in the form the hub expects (for example a topic key that is not three hex ids).
        public static let invalidArgument = Code(.invalidArgument)
        /// The operation needs a registered device and this one has not registered yet (call `start()`).
        public static let notRegistered = Code(.notRegistered)
        /// The task was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The app's `PushProvider` could not give the device's FCM token.
        public static let pushProvider = Code(.pushProvider)

        /// The HTTP status when the hub refused the request, else `nil`.
        public var hubStatus: Int? {
            if case .hub(let status, _) = base { status } else { nil }
        }

        /// The code's name, with the status and code of a hub refusal.
        public var description: String {
            switch base {
            case .network: "network"
            case .hub(let status, let code): "hub(\(status), \(code))"
            case .invalidResponse: "invalidResponse"
            case .database: "database"
            case .invalidPayload: "invalidPayload"
            case .invalidArgument: "invalidArgument"
            case .notRegistered: "notRegistered"
            case .cancelled: "cancelled"
            case .pushProvider: "pushProvider"
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for a person (the hub's own message when it sent one); may quote data, so not in `description`.
    public var message: String
    /// The error that caused this one (URLSession's, GRDB's, a decoder's), if any.
    public var underlying: (any Error)?

    /// Creates an error with a code, a message and what caused it.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The code only: safe to log.
    public var description: String { "MSIKitError(\(code))" }
}

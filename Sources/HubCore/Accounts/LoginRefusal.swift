/// Why a login (portal form, HTTP Basic) was refused: a code each adapter maps once (401, 429 or 503 and a
/// page or a JSON error), and when to try again.
public struct LoginRefusal: Error, Sendable, CustomStringConvertible {
    /// The codes of a `LoginRefusal`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case invalidCredentials, throttled, busy, passwordsOff }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The username and password do not match an enabled user (which of them is wrong is not said).
        public static let invalidCredentials = Code(.invalidCredentials)
        /// Too many failed logins for this username or from this address within the window (429).
        public static let throttled = Code(.throttled)
        /// Every password check is taken and the queue for them is full: the hub answers at once rather than
        /// letting logins wait behind each other (503).
        public static let busy = Code(.busy)
        /// Staff sign in through the OpenID provider only (`OIDC_ONLY=true`): no password is checked (401).
        public static let passwordsOff = Code(.passwordsOff)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for a person; never quotes the password.
    public let message: String
    /// Whole seconds after which trying again may succeed (`Retry-After`); nil for wrong credentials.
    public let retryAfterSeconds: Int?

    init(_ code: Code, _ message: String, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "LoginRefusal.\(code): \(message)" }

    /// The refusal for a username and password that do not match an enabled user.
    static let invalidCredentials = LoginRefusal(.invalidCredentials, "the username or password is not right")

    /// The refusal of every password when staff sign in through the OpenID provider only.
    static let passwordsOff = LoginRefusal(
        .passwordsOff, "passwords are switched off: staff sign in through the school's identity provider")

    /// The refusal when every password check is taken and the queue is full.
    static let busy = LoginRefusal(
        .busy, "the hub is checking too many passwords at once; try again in a second",
        retryAfterSeconds: 1)
}

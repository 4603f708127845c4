import OIDC

/// Why a sign-in through the OpenID provider ended on the login page: a code the portal maps to a page (403 for a
/// user in none of the groups, else the login page with `message`), never a 500.
public struct SignInRefusal: Error, Sendable, CustomStringConvertible {
    /// The codes of a `SignInRefusal`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case notConfigured, noAttempt, stateMismatch, provider, notInGroups, disabled, invalidUsername
            case tooManyAttempts
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// No provider is configured (`OIDC_ISSUER` unset).
        public static let notConfigured = Code(.notConfigured)
        /// No sign-in was begun in this browser, it expired, or its callback was already used.
        public static let noAttempt = Code(.noAttempt)
        /// The callback's `state` is not the one this browser's sign-in sent.
        public static let stateMismatch = Code(.stateMismatch)
        /// The provider refused, could not be reached, or its id_token does not verify (`oidc` says which).
        public static let provider = Code(.provider)
        /// The user is in none of the admin and communicator groups (403).
        public static let notInGroups = Code(.notInGroups)
        /// An admin disabled the user in the hub.
        public static let disabled = Code(.disabled)
        /// The username claim is missing or not a name the hub takes.
        public static let invalidUsername = Code(.invalidUsername)
        /// The address began more sign-ins this minute than `StaffSignIn.beginsPerMinute` (429, `retryAfter`).
        public static let tooManyAttempts = Code(.tooManyAttempts)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for the person signing in.
    public let message: String
    /// The provider's error behind a `.provider` refusal.
    public let oidc: OIDCError?
    /// When to try again, in seconds (`.tooManyAttempts`).
    public let retryAfter: Int?

    init(_ code: Code, _ message: String, oidc: OIDCError? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.oidc = oidc
        self.retryAfter = retryAfter
    }

    public var description: String { "SignInRefusal.\(code): \(message)" }
}

/// Why a sign-in through the OpenID provider failed: a code the portal switches on, and a sentence it may show
/// (never a token, a code or a secret).
public struct OIDCError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Sendable {
            case unavailable, misconfigured, insecureEndpoint, providerError, tokenRefused, invalidIDToken
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The provider could not be reached, or answered with a server error: try again later.
        public static let unavailable = Code(.unavailable)
        /// The discovery document or the JWKS is not usable (another issuer, a field missing, no key).
        public static let misconfigured = Code(.misconfigured)
        /// An endpoint the hub sends a secret to (token, JWKS) is plain `http://` to another machine.
        public static let insecureEndpoint = Code(.insecureEndpoint)
        /// The provider sent the browser back with an `error` (`access_denied`, `login_required`, ...).
        public static let providerError = Code(.providerError)
        /// The token endpoint refused the code (used already, expired, not this client's, a wrong verifier).
        public static let tokenRefused = Code(.tokenRefused)
        /// The id_token does not verify: signature, algorithm, `iss`, `aud`, `azp`, `exp`, `iat` or `nonce`.
        public static let invalidIDToken = Code(.invalidIDToken)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for the person signing in or the operator's log.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "OIDCError.\(code): \(message)" }
}

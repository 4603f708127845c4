/// Why a signed token was refused before or beside jwt-kit's own checks: a caller switches on `code` and says the
/// reason in its own words (never the token).
public struct SignedTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case malformed, algorithmMismatch, noKey
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The token is not three base64url parts with a JSON header naming an `alg`.
        public static let malformed = Code(.malformed)
        /// The header's `alg` is not the one algorithm its key is pinned to.
        public static let algorithmMismatch = Code(.algorithmMismatch)
        /// No key could verify it (none loaded, or its `kid` unknown with no default key).
        public static let noKey = Code(.noKey)

        public var description: String { "\(value)" }
    }

    public let code: Code

    public init(_ code: Code) { self.code = code }

    public var description: String { "SignedTokenError(\(code))" }
}

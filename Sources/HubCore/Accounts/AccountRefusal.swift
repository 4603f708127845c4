/// Why an account change was refused: a code each adapter (REST, portal, command line) maps once, to a
/// status, a form field or an exit message.
public struct AccountRefusal: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case invalidName, nameTaken, userNotFound, tokenNotFound, weakPassword, selfLockout }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The name breaks the username rule (`AccountService.nameProblem`).
        public static let invalidName = Code(.invalidName)
        /// A user, or a live token, has the name already.
        public static let nameTaken = Code(.nameTaken)
        /// No user has the name.
        public static let userNotFound = Code(.userNotFound)
        /// No live token has the name or id.
        public static let tokenNotFound = Code(.tokenNotFound)
        /// The password is shorter than `AccountService.minimumPasswordLength`.
        public static let weakPassword = Code(.weakPassword)
        /// An admin may not disable themself or take away their own admin role.
        public static let selfLockout = Code(.selfLockout)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for a person; names only what the caller gave.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "AccountRefusal.\(code): \(message)" }
}

/// Why an account change was refused: a code each adapter (REST, portal, command line) maps once, to a
/// status, a form field or an exit message.
public typealias AccountRefusal = Refusal<AccountRefusalCode>

/// The codes of a `AccountRefusal`.
public struct AccountRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String { case invalidName, nameTaken, userNotFound, tokenNotFound, weakPassword, selfLockout }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// The name breaks the username rule (`AccountService.nameProblem`).
    public static let invalidName = AccountRefusalCode(.invalidName)
    /// A user, or a live token, has the name already.
    public static let nameTaken = AccountRefusalCode(.nameTaken)
    /// No user has the name.
    public static let userNotFound = AccountRefusalCode(.userNotFound)
    /// No live token has the name or id.
    public static let tokenNotFound = AccountRefusalCode(.tokenNotFound)
    /// The password is shorter than `AccountService.minimumPasswordLength`.
    public static let weakPassword = AccountRefusalCode(.weakPassword)
    /// An admin may not disable themself or take away their own admin role.
    public static let selfLockout = AccountRefusalCode(.selfLockout)

    public var description: String { value.rawValue }
}

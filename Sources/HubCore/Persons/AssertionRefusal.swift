/// Why a person assertion was refused: a code each adapter maps once.
public typealias AssertionRefusal = Refusal<AssertionRefusalCode>

/// The codes of an `AssertionRefusal`.
public struct AssertionRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case invalidAssertion, notConfigured, replayed
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// The assertion does not verify: its signature, issuer, audience, times or person claim (the message says which).
    public static let invalidAssertion = AssertionRefusalCode(.invalidAssertion)
    /// Neither `PERSON_ASSERTION_SECRET` nor `PERSON_ASSERTION_JWKS` is set: the hub binds no device to a person.
    public static let notConfigured = AssertionRefusalCode(.notConfigured)

    /// The assertion verifies but has bound a device already (on this hub or another replica): each binds once.
    public static let replayed = AssertionRefusalCode(.replayed)

    public var description: String { value.rawValue }
}

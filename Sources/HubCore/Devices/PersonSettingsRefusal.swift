/// Why a change of a person's settings was refused: a code each adapter maps once.
public typealias PersonSettingsRefusal = Refusal<PersonSettingsRefusalCode>

/// The codes of a `PersonSettingsRefusal`.
public struct PersonSettingsRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case notBound, invalidSettings
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// The device is bound to no person: it has no person's settings.
    public static let notBound = PersonSettingsRefusalCode(.notBound)
    /// A field is not one the settings take, or its value is not one of its values.
    public static let invalidSettings = PersonSettingsRefusalCode(.invalidSettings)

    public var description: String { value.rawValue }
}

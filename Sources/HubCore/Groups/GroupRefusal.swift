/// Why a group request was refused: a code each adapter maps once; the message names the field at fault.
public typealias GroupRefusal = Refusal<GroupRefusalCode>

/// The codes of a `GroupRefusal`.
public struct GroupRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case groupNotFound, memberNotFound, invalidID, invalidField, erasedPerson
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// No group has the id.
    public static let groupNotFound = GroupRefusalCode(.groupNotFound)
    /// The person is not a member of the group.
    public static let memberNotFound = GroupRefusalCode(.memberNotFound)
    /// A group or person id that breaks the rules of `GroupService`.
    public static let invalidID = GroupRefusalCode(.invalidID)
    /// A field (name, members, access) that breaks the rules of `GroupService`.
    public static let invalidField = GroupRefusalCode(.invalidField)

    /// The person was erased within `ERASURE_BLOCK_DAYS`: a roster does not bring them back.
    public static let erasedPerson = GroupRefusalCode(.erasedPerson)

    public var description: String { value.rawValue }
}

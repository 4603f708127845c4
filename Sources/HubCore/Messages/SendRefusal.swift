/// Why a message was not sent: a code each adapter (POST /message, the portal's send form) maps once.
public typealias SendRefusal = Refusal<SendRefusalCode>

/// The codes of a `SendRefusal`.
public struct SendRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String { case topicNotFound, distributionMismatch, alertNeedsDesc, accessDenied }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// No subject has the topic key.
    public static let topicNotFound = SendRefusalCode(.topicNotFound)
    /// The message's distribution is not its subject's.
    public static let distributionMismatch = SendRefusalCode(.distributionMismatch)
    /// An Alert needs a `desc`: it is the push notification's body.
    public static let alertNeedsDesc = SendRefusalCode(.alertNeedsDesc)
    /// The sender is not on an access list on the way down to the subject.
    public static let accessDenied = SendRefusalCode(.accessDenied)

    public var description: String { value.rawValue }
}

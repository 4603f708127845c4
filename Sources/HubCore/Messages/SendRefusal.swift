/// Why a message was not sent: a code each adapter (POST /message, the portal's send form) maps once, a sentence for
/// a person, and the field at fault when there is one (where a form shows the refusal).
public struct SendRefusal: Error, Sendable, CustomStringConvertible {
    public let code: SendRefusalCode
    /// A sentence for a person, naming fields as the API does.
    public let message: String
    /// The submission's field at fault; nil when the refusal is about the message as a whole (its subject's
    /// distribution, the sender's access to it, an idempotency key).
    public let field: MessageField?

    public init(_ code: SendRefusalCode, _ message: String, field: MessageField? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "Refusal.\(code): \(message)" }
}

/// The codes of a `SendRefusal`.
public struct SendRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: String {
        case fieldTooLong, emptyField, topicNotFound, distributionMismatch, alertNeedsDesc, accessDenied
        case idempotencyKeyReused
        case invalidRecipients, groupNotFound, recipientAccessDenied, invalidData, relayBehind
        case invalidUrgency, overridePreferencesForbidden
        case invalidAck
        case invalidTranslations, invalidImage, invalidKind, invalidExpiry, invalidDisplay, invalidSample
    }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// A field is longer than its `MessageField.maxLength`.
    public static let fieldTooLong = SendRefusalCode(.fieldTooLong)
    /// A field that needs a value is empty (the topic key).
    public static let emptyField = SendRefusalCode(.emptyField)
    /// No subject has the topic key.
    public static let topicNotFound = SendRefusalCode(.topicNotFound)
    /// The message's distribution is not its subject's.
    public static let distributionMismatch = SendRefusalCode(.distributionMismatch)
    /// An Alert needs a `desc`: it is the push notification's body.
    public static let alertNeedsDesc = SendRefusalCode(.alertNeedsDesc)
    /// The sender is not on an access list on the way down to the subject.
    public static let accessDenied = SendRefusalCode(.accessDenied)
    /// The sender used the `Idempotency-Key` for another submission within its lifetime.
    public static let idempotencyKeyReused = SendRefusalCode(.idempotencyKeyReused)
    /// The message names both a topic and persons or groups, or `to` is malformed (no one, too many, a bad id).
    public static let invalidRecipients = SendRefusalCode(.invalidRecipients)
    /// A group the message is addressed to does not exist.
    public static let groupNotFound = SendRefusalCode(.groupNotFound)
    /// The sender may not send to a person directly (no right `direct`) or to a group whose `access` does not name
    /// them.
    public static let recipientAccessDenied = SendRefusalCode(.recipientAccessDenied)
    /// The relay is further behind than `RELAY_MAX_BACKLOG_SECONDS`: nothing is stored; try again later.
    public static let relayBehind = SendRefusalCode(.relayBehind)
    /// The `data` object breaks its rules (a reserved or malformed key, too many bytes).
    public static let invalidData = SendRefusalCode(.invalidData)

    /// `urgency` is not one of passive, active, time-sensitive, critical.
    public static let invalidUrgency = SendRefusalCode(.invalidUrgency)
    /// `override_preferences` from anyone but an admin.
    public static let overridePreferencesForbidden = SendRefusalCode(.overridePreferencesForbidden)
    /// `ack` breaks its rules (responses, `within_s`, `resend`).
    public static let invalidAck = SendRefusalCode(.invalidAck)
    /// `lang` or `translations` break their rules (codes, texts, an Alert's translated `desc`).
    public static let invalidTranslations = SendRefusalCode(.invalidTranslations)
    /// `image` is not an https URL of at most 1 KB.
    public static let invalidImage = SendRefusalCode(.invalidImage)
    /// `kind` or `dismissible` break their rules.
    public static let invalidKind = SendRefusalCode(.invalidKind)
    /// `expires_at` is not a time ahead (after `send_at`), in Unix ms or RFC 3339.
    public static let invalidExpiry = SendRefusalCode(.invalidExpiry)
    /// `display` is not a boolean, or a non-display message has no `data` or something to show.
    public static let invalidDisplay = SendRefusalCode(.invalidDisplay)
    /// `sample` is not in (0, 1), names no topic, or `cohort` is malformed.
    public static let invalidSample = SendRefusalCode(.invalidSample)

    public var description: String { value.rawValue }
}

import DAO
import HubModel

/// The send rules of a submission's own fields, the one home of what every sender (POST /message, the portal's form)
/// may put in a message: each field within its `MessageField.maxLength`, a topic key, and an Alert's `desc` (its
/// push notification's body). Whether a field is present at all is the adapter's to read; the subject's rules (it
/// exists, has this distribution, the sender may send to it) are `MessageService.send`'s, which applies these too.
extension MessageService.Submission {
    /// Every rule the submission breaks, field by field (title, desc, message, topic_key), then an Alert's missing
    /// `desc`: what a form shows beside its fields; empty when the fields may be sent.
    public var refusals: [SendRefusal] {
        fieldRefusals + (alertRefusal.map { [$0] } ?? [])
    }

    /// The most person ids and group ids one message names (a group holds more).
    public static let maximumPersons = 1_000
    public static let maximumGroups = 50

    /// The refusals of fields over their length, or of an empty topic key, in field order; then of the recipients
    /// (a topic and recipients both, none of either, too many, a bad id) and of `data` (`MessageData`).
    var fieldRefusals: [SendRefusal] {
        textRefusals
            + [
                recipientsRefusal, MessageData.problem(data).map { SendRefusal(.invalidData, $0) },
                broadcastRefusal,
            ].compactMap { $0 }
    }

    /// The refusal of the recipients: exactly one of a topic and `to`, `to` naming someone, within the limits, ids
    /// valid (`GroupService`'s rules); nil for a topic message or a valid `to`.
    var recipientsRefusal: SendRefusal? {
        guard let recipients else { return nil }
        if !topicKey.isEmpty {
            return SendRefusal(.invalidRecipients, "a message has either \"topic_key\" or \"to\", not both")
        }
        if recipients.persons.isEmpty && recipients.groups.isEmpty {
            return SendRefusal(.invalidRecipients, "\"to\" must name at least one person or group")
        }
        if recipients.persons.count > Self.maximumPersons || recipients.groups.count > Self.maximumGroups {
            return SendRefusal(
                .invalidRecipients,
                "\"to\" names at most \(Self.maximumPersons) persons and "
                    + "\(Self.maximumGroups) groups (a group holds more)")
        }
        if recipients.exceptPersons.count > Self.maximumPersons {
            return SendRefusal(
                .invalidRecipients, "\"to.except\" leaves out at most \(Self.maximumPersons) persons")
        }
        if !recipients.exceptPersons.isEmpty && recipients.groups.isEmpty {
            return SendRefusal(
                .invalidRecipients, "\"to.except\" leaves persons out of groups: name at least one group")
        }
        if let problem = recipients.persons.lazy.compactMap(GroupService.personIDProblem).first
            ?? recipients.groups.lazy.compactMap(GroupService.groupIDProblem).first
            ?? recipients.exceptPersons.lazy.compactMap(GroupService.personIDProblem).first
        {
            return SendRefusal(.invalidRecipients, "to: \(problem)")
        }
        return nil
    }

    /// The refusals of text fields over their length, or of an empty topic key (a topic message), in field order.
    var textRefusals: [SendRefusal] {
        MessageField.allCases.compactMap { field in
            let value = self[field]
            if value.count > field.maxLength {
                return SendRefusal(
                    .fieldTooLong,
                    "the field \"\(field.rawValue)\" is longer than \(field.maxLength) characters", field: field)
            }
            if field == .topicKey, value.isEmpty, recipients == nil {
                return SendRefusal(.emptyField, "the field \"\(field.rawValue)\" must not be empty", field: field)
            }
            return nil
        }
    }

    /// The refusal of an Alert without its `desc`, which is the push notification's body; nil for any other.
    var alertRefusal: SendRefusal? {
        guard distribution == .alert, desc.isEmpty else { return nil }
        return SendRefusal(
            .alertNeedsDesc,
            "the field \"desc\" must not be empty for an Alert: it is the push notification's body",
            field: .desc)
    }

    /// The urgency a sender's `urgency` value names (`Urgency.default` when absent): the one reading of the
    /// field that POST /message and the portal's form share.
    /// - Throws: `SendRefusal.invalidUrgency` for any other value.
    public static func urgency(named name: String?) throws -> Urgency {
        guard let name else { return .default }
        guard let urgency = Urgency(rawValue: name) else {
            let allowed = Urgency.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw SendRefusal(.invalidUrgency, "the field \"urgency\" must be one of \(allowed)")
        }
        return urgency
    }

    /// The value of `field`.
    public subscript(field: MessageField) -> String {
        switch field {
        case .title: title
        case .desc: desc
        case .message: message
        case .topicKey: topicKey
        }
    }
}

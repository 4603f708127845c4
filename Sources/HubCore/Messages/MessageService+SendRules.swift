import DAO

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

    /// The refusals of fields over their length, or of an empty topic key, in field order.
    var fieldRefusals: [SendRefusal] {
        MessageField.allCases.compactMap { field in
            let value = self[field]
            if value.count > field.maxLength {
                return SendRefusal(.fieldTooLong,
                                   "the field \"\(field.rawValue)\" is longer than \(field.maxLength) characters", field: field)
            }
            if field == .topicKey, value.isEmpty {
                return SendRefusal(.emptyField, "the field \"\(field.rawValue)\" must not be empty", field: field)
            }
            return nil
        }
    }

    /// The refusal of an Alert without its `desc`, which is the push notification's body; nil for any other.
    var alertRefusal: SendRefusal? {
        guard distribution == .alert, desc.isEmpty else { return nil }
        return SendRefusal(.alertNeedsDesc,
                           "the field \"desc\" must not be empty for an Alert: it is the push notification's body",
                           field: .desc)
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

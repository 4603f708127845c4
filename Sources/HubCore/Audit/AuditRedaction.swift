import Mongo

/// The one place that keeps secrets out of the audit log: every `change` passes through `redact` before it is hashed.
public enum AuditRedaction {
    /// Field names whose values are secrets wherever they appear (compared without case).
    static let secretFields: Set<String> = [
        "password", "password_hash", "passwordhash", "hash", "secret", "secret_hash", "token", "token_hash",
        "registration", "registration_token", "csrf_token", "session", "session_key", "key", "assertion",
        "authorization", "signing_secret",
    ]
    /// Prefixes of secret strings the hub makes (API tokens, device secrets, webhook secrets, bcrypt hashes).
    static let secretPrefixes = ["msi_", "msd_", "whsec_", "$2a$", "$2b$", "$2y$"]
    /// What a redacted value becomes (so the entry still says that the field was there).
    public static let placeholder = "[redacted]"

    /// `document` with every secret field's value and every secret-looking string replaced by `placeholder`.
    public static func redact(_ document: BSONDocument) -> BSONDocument {
        BSONDocument(
            document.elements.map { element in
                if secretFields.contains(element.key.lowercased()) {
                    return (key: element.key, value: .string(placeholder))
                }
                return (key: element.key, value: redact(element.value))
            })
    }

    /// `value` with the secrets in it replaced.
    static func redact(_ value: BSONValue) -> BSONValue {
        switch value {
        case .document(let document): .document(redact(document))
        case .array(let values): .array(values.map(redact))
        case .string(let text) where secretPrefixes.contains(where: text.hasPrefix): .string(placeholder)
        case .binary: .string(placeholder)
        default: value
        }
    }
}

/// The usual shapes of an entry's `change`.
public enum AuditChange {
    /// An edit: the fields before and after.
    public static func edit(before: BSONDocument, after: BSONDocument) -> BSONDocument {
        ["before": .document(before), "after": .document(after)]
    }

    /// A creation: the new thing's fields.
    public static func created(_ after: BSONDocument) -> BSONDocument {
        ["after": .document(after)]
    }

    /// A deletion: the fields of what was removed.
    public static func deleted(_ before: BSONDocument) -> BSONDocument {
        ["before": .document(before)]
    }
}

import Mongo

/// Who did something the audit log records: a user, an API token, a device or the hub itself.
public struct AuditActor: Sendable, Equatable {
    /// How the actor proved who it is.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case user, token, device, system
    }

    /// User, token, device or system.
    public var kind: Kind
    /// The user's or token's name, the device's id, or what part of the hub acted (`msi-hub cli`).
    public var name: String

    /// An actor of `kind` named `name`.
    public init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }

    /// The hub itself, when no caller is known (start-up, background work).
    public static let system = AuditActor(kind: .system, name: "hub")

    /// The actor as stored: `{kind, name}`.
    public var document: BSONDocument { ["kind": .string(kind.rawValue), "name": .string(name)] }

    /// The actor a stored `{kind, name}` holds (an unknown kind reads as system).
    init(document: BSONDocument?) {
        self.kind = document?["kind"]?.stringValue.flatMap(Kind.init(rawValue:)) ?? .system
        self.name = document?["name"]?.stringValue ?? ""
    }
}

/// What an audit entry is about: a kind (`channel`, `message`, `user`, `token`, `group`, `webhook`, `device`) and its id.
public struct AuditTarget: Sendable, Equatable {
    /// The kind of thing acted on.
    public var kind: String
    /// Its id or name, as a string.
    public var id: String
    /// Whether `id` is already the pseudonym of a person, user or device (an erasure's record, which must not seal
    /// the clear id again), not to be stored as such.
    public var isPseudonym: Bool

    /// The thing of `kind` with `id`.
    public init(kind: String, id: String) {
        self.kind = kind
        self.id = id
        self.isPseudonym = false
    }

    /// The person, user or device of `kind` named by `pseudonym` only: the entry cannot be opened to their id.
    public static func pseudonymous(_ kind: AuditSubject.Kind, _ pseudonym: String) -> AuditTarget {
        var target = AuditTarget(kind: kind.rawValue, id: pseudonym)
        target.isPseudonym = true
        return target
    }

    /// The target as stored: `{kind, id}`.
    public var document: BSONDocument { ["kind": .string(kind), "id": .string(id)] }
}

/// A person, user or device an audit entry names: under its keyed pseudonym wherever the entry names it (the actor,
/// the target, the persons of its `change`), with its clear id sealed under a key of its own (`AuditKeyDAO`) that an
/// erasure deletes, after which the entry still verifies and no longer says who it was.
public struct AuditSubject: Sendable, Equatable {
    /// The kinds of things named by pseudonym.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case person, user, device
    }

    /// Person, user or device.
    public var kind: Kind
    /// The keyed pseudonym that stands for the id in the entry (64 hex digits).
    public var pseudonym: String
    /// The clear id sealed with the subject's key (AES-GCM, base64); nil when the entry was written without it (an
    /// erasure's own record).
    public var sealed: String?

    public init(kind: Kind, pseudonym: String, sealed: String?) {
        self.kind = kind
        self.pseudonym = pseudonym
        self.sealed = sealed
    }

    /// As stored: `{kind, id, sealed?}` (`id` is the pseudonym, which `subjects.id` is indexed on).
    public var document: BSONDocument {
        var document: BSONDocument = ["kind": .string(kind.rawValue), "id": .string(pseudonym)]
        if let sealed { document["sealed"] = .string(sealed) }
        return document
    }

    /// The subject a stored `{kind, id, sealed?}` holds; nil when it is not one.
    init?(document: BSONDocument?) {
        guard let kind = document?["kind"]?.stringValue.flatMap(Kind.init(rawValue:)),
            let pseudonym = document?["id"]?.stringValue
        else { return nil }
        self.init(kind: kind, pseudonym: pseudonym, sealed: document?["sealed"]?.stringValue)
    }
}

/// One entry of the hash-chained `audit` collection.
///
/// Stored shape: `{_id, seq: Int64, at: Int64 (Unix ms), actor: {kind, name}, action: "cube.channel.create",
/// target: {kind, id}, change?: {...}, subjects?: [{kind, id, sealed?}], prev: hex SHA-256, hash: hex SHA-256}`; where
/// `subjects` is present, the persons, users and devices it lists are named by their pseudonyms (`AuditSubject`). `hash` covers the canonical encoding
/// (`AuditCanonicalEncoding`) of every stored field but `_id` and `hash`, `prev` included.
public struct AuditEntry: Sendable, Equatable {
    /// The `prev` of the first entry: 64 zeros.
    public static let genesis = String(repeating: "0", count: 64)

    /// 1, 2, 3 ...: the entry's place in the chain (unique).
    public var seq: Int64
    /// When it was recorded (Unix ms).
    public var at: Int64
    /// Who acted.
    public var actor: AuditActor
    /// What was done, a dotted name (`message.send`).
    public var action: String
    /// What it was done to.
    public var target: AuditTarget
    /// What changed (before/after of an edit, the fields of a creation), redacted; nil when nothing to say.
    public var change: BSONDocument?
    /// The persons, users and devices the entry names by pseudonym (none in entries written before pseudonyms).
    public var subjects: [AuditSubject]
    /// The hash of the entry before (`genesis` for the first).
    public var prev: String
    /// The hash of this entry's canonical encoding.
    public var hash: String
    /// The document as read from the database (empty for an entry being built): what `verify` hashes again.
    public var stored: BSONDocument

    /// An entry not yet hashed (`hash` empty until the caller fills it from `hashedFields`).
    public init(
        seq: Int64, at: Int64, actor: AuditActor, action: String, target: AuditTarget, change: BSONDocument?,
        subjects: [AuditSubject] = [], prev: String
    ) {
        self.seq = seq
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.change = change
        self.subjects = subjects
        self.prev = prev
        self.hash = ""
        self.stored = BSONDocument()
    }

    /// The entry a stored document holds; nil without an integer `seq`.
    public init?(document: BSONDocument) {
        guard let seq = document["seq"]?.int64Value else { return nil }
        self.seq = seq
        self.at = document["at"]?.int64Value ?? 0
        self.actor = AuditActor(document: document["actor"]?.documentValue)
        self.action = document["action"]?.stringValue ?? ""
        let target = document["target"]?.documentValue
        self.target = AuditTarget(kind: target?["kind"]?.stringValue ?? "", id: target?["id"]?.stringValue ?? "")
        self.change = document["change"]?.documentValue
        self.subjects = (document["subjects"]?.arrayValue ?? []).compactMap { AuditSubject(document: $0.documentValue) }
        self.prev = document["prev"]?.stringValue ?? ""
        self.hash = document["hash"]?.stringValue ?? ""
        self.stored = document
    }

    /// The fields the hash covers, as they will be stored (everything but `_id` and `hash`).
    public var hashedFields: BSONDocument {
        if !stored.isEmpty { return BSONDocument(stored.elements.filter { $0.key != "_id" && $0.key != "hash" }) }
        var fields: [(key: String, value: BSONValue)] = [
            ("seq", .int64(seq)), ("at", .int64(at)), ("actor", .document(actor.document)),
            ("action", .string(action)), ("target", .document(target.document)),
        ]
        if let change { fields.append(("change", .document(change))) }
        if !subjects.isEmpty { fields.append(("subjects", .array(subjects.map { .document($0.document) }))) }
        fields.append(("prev", .string(prev)))
        return BSONDocument(fields)
    }

    /// The canonical bytes the hash is computed over.
    public var canonicalBytes: [UInt8] { AuditCanonicalEncoding.bytes(of: hashedFields) }

    /// The document stored for a new entry.
    var document: BSONDocument {
        BSONDocument(hashedFields.elements + [(key: "hash", value: .string(hash))])
    }
}

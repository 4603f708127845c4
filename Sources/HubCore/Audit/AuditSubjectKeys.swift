import Crypto
import DAO
import Foundation
import Mongo

/// The one place that decides how the audit log names persons, users and devices: by their keyed pseudonym
/// (`AuditPseudonyms`) wherever an entry names them (a user or device actor, a person, user or device target, the
/// persons in its `change`), with the clear id sealed (AES-GCM) under a key of the subject's own (`AuditKeyDAO`).
/// Readers get the clear ids back while the keys exist (`reveal`); an erasure deletes the keys (`forget`), and the
/// entries, whose hashes covered only pseudonyms and sealed ids, still verify and no longer say who it was.
public actor AuditSubjectKeys {
    /// The keyed hashes.
    public let pseudonyms: AuditPseudonyms
    let keys: AuditKeyDAO
    /// Keys read or made lately, by pseudonym, so that a busy subject costs no read per entry; kept a few minutes, so
    /// a key another replica deleted is not used for long (an entry sealed with it meanwhile is unreadable, as it
    /// should be).
    private var cache: [String: (key: SymmetricKey, at: ContinuousClock.Instant)] = [:]

    /// How long a key is used from memory before it is read again.
    static let cacheLifetime: Duration = .seconds(300)
    /// The most keys kept in memory.
    static let cacheLimit = 20_000
    /// The keys of `change` whose values (a string, or an array of strings) are person ids.
    static let personFields: Set<String> = ["person", "persons", "managers"]

    public init(pseudonyms: AuditPseudonyms, database: MongoDatabase) {
        self.pseudonyms = pseudonyms
        self.keys = AuditKeyDAO(database: database)
    }

    /// The kind of subject an actor is, if it is named by pseudonym.
    static func kind(of actor: AuditActor) -> AuditSubject.Kind? {
        switch actor.kind {
        case .user: .user
        case .device: .device
        case .token, .system: nil
        }
    }

    /// `draft` with its subjects named by pseudonym and listed (their clear ids sealed), ready to be chained.
    /// - Throws: `DAOError` when a key cannot be read or stored.
    func pseudonymize(_ draft: AuditLog.Draft) async throws -> AuditLog.Draft {
        var named: [(id: String, kind: AuditSubject.Kind, sealed: Bool)] = []
        if let kind = Self.kind(of: draft.actor) { named.append((draft.actor.name, kind, true)) }
        if let kind = AuditSubject.Kind(rawValue: draft.target.kind) {
            named.append((draft.target.id, kind, !draft.target.isPseudonym))
        }
        if let change = draft.change { Self.persons(in: change, into: &named) }
        guard !named.isEmpty else { return draft }

        var pseudonymOf: [String: String] = [:]  // "kind:id" → pseudonym
        var subjects: [AuditSubject] = []
        var needKeys: [(pseudonym: String, kind: String)] = []
        var clear: [String: String] = [:]
        for subject in named {
            let label = subject.kind.rawValue + ":" + subject.id
            guard pseudonymOf[label] == nil else { continue }
            let pseudonym =
                subject.sealed ? try await pseudonyms.pseudonym(of: subject.id, kind: subject.kind) : subject.id
            pseudonymOf[label] = pseudonym
            subjects.append(AuditSubject(kind: subject.kind, pseudonym: pseudonym, sealed: nil))
            if subject.sealed {
                needKeys.append((pseudonym, subject.kind.rawValue))
                clear[pseudonym] = subject.id
            }
        }
        let keys = try await self.keys(for: needKeys)
        for index in subjects.indices {
            let pseudonym = subjects[index].pseudonym
            if let id = clear[pseudonym], let key = keys[pseudonym] {
                subjects[index].sealed = try Self.seal(id, pseudonym: pseudonym, key: key)
            }
        }

        var draft = draft
        if let kind = Self.kind(of: draft.actor), let pseudonym = pseudonymOf[kind.rawValue + ":" + draft.actor.name] {
            draft.actor.name = pseudonym
        }
        if let pseudonym = pseudonymOf[draft.target.kind + ":" + draft.target.id] {
            draft.target.id = pseudonym
            draft.target.isPseudonym = false
        }
        draft.change = draft.change.map { Self.replacingPersons(in: $0) { pseudonymOf["person:" + $0] ?? $0 } }
        draft.subjects = subjects
        return draft
    }

    /// `entries` as a reader sees them: each pseudonym replaced by the clear id its key opens, or by "erased person"
    /// (device, user) when the key is gone. Entries keep their stored document and hash.
    /// - Throws: `DAOError`.
    public func reveal(_ entries: [AuditEntry]) async throws -> [AuditEntry] {
        let wanted = Set(entries.flatMap { $0.subjects.filter { $0.sealed != nil }.map(\.pseudonym) })
        let stored = wanted.isEmpty ? [:] : try await keys.keys(Array(wanted))
        return entries.map { entry in
            guard !entry.subjects.isEmpty else { return entry }
            var names: [String: String] = [:]
            for subject in entry.subjects {
                if let sealed = subject.sealed, let key = stored[subject.pseudonym],
                    let id = try? Self.open(sealed, pseudonym: subject.pseudonym, key: SymmetricKey(data: key))
                {
                    names[subject.pseudonym] = id
                } else {
                    names[subject.pseudonym] = "erased \(subject.kind.rawValue)"
                }
            }
            var entry = entry
            entry.actor.name = names[entry.actor.name] ?? entry.actor.name
            entry.target.id = names[entry.target.id] ?? entry.target.id
            entry.change = entry.change.map { Self.replacingStrings(in: $0) { names[$0] ?? $0 } }
            return entry
        }
    }

    /// The pseudonyms `name` stands under as any of `kinds`, for a search of the log.
    /// - Throws: `DAOError` when the stored pseudonym key cannot be read.
    public func pseudonyms(of name: String, as kinds: [AuditSubject.Kind]) async throws -> [String] {
        var found: [String] = []
        for kind in kinds { found.append(try await pseudonyms.pseudonym(of: name, kind: kind)) }
        return found
    }

    /// Deletes the keys of `pseudonyms`, here and in the database: every entry naming them keeps its pseudonym and no
    /// longer opens to the id. Answers how many keys there were.
    /// - Throws: `DAOError`.
    public func forget(_ pseudonyms: [String]) async throws -> Int64 {
        for pseudonym in pseudonyms { cache[pseudonym] = nil }
        return try await keys.delete(pseudonyms)
    }

    // MARK: Keys and seals

    /// The keys of `subjects`, from memory when read lately, else read or made in one go.
    private func keys(for subjects: [(pseudonym: String, kind: String)]) async throws -> [String: SymmetricKey] {
        let now = ContinuousClock.now
        var found: [String: SymmetricKey] = [:]
        var missing: [(pseudonym: String, kind: String)] = []
        for subject in subjects {
            if let cached = cache[subject.pseudonym], now - cached.at < Self.cacheLifetime {
                found[subject.pseudonym] = cached.key
            } else {
                missing.append(subject)
            }
        }
        guard !missing.isEmpty else { return found }
        let stored = try await keys.keys(for: missing) {
            SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        }
        if cache.count + stored.count > Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
        for (pseudonym, bytes) in stored {
            let key = SymmetricKey(data: bytes)
            found[pseudonym] = key
            cache[pseudonym] = (key, now)
        }
        return found
    }

    /// `id` sealed with `key` (AES-GCM, bound to `pseudonym`), as base64.
    static func seal(_ id: String, pseudonym: String, key: SymmetricKey) throws -> String {
        let box = try AES.GCM.seal(Data(id.utf8), using: key, authenticating: Data(pseudonym.utf8))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return combined.base64EncodedString()
    }

    /// The id `sealed` holds, opened with `key`; throws when it does not open.
    static func open(_ sealed: String, pseudonym: String, key: SymmetricKey) throws -> String {
        guard let data = Data(base64Encoded: sealed) else { throw CryptoKitError.incorrectParameterSize }
        let box = try AES.GCM.SealedBox(combined: data)
        return String(decoding: try AES.GCM.open(box, using: key, authenticating: Data(pseudonym.utf8)), as: UTF8.self)
    }

    // MARK: The persons of a change

    /// Appends the person ids `document` holds under `personFields`, at any depth.
    static func persons(
        in document: BSONDocument, into named: inout [(id: String, kind: AuditSubject.Kind, sealed: Bool)]
    ) {
        for element in document.elements {
            if personFields.contains(element.key) {
                switch element.value {
                case .string(let id): named.append((id, .person, true))
                case .array(let values): named += values.compactMap { $0.stringValue.map { ($0, .person, true) } }
                default: break
                }
            } else if let inner = element.value.documentValue {
                persons(in: inner, into: &named)
            }
        }
    }

    /// `document` with the person ids under `personFields`, at any depth, passed through `replace`.
    static func replacingPersons(in document: BSONDocument, _ replace: (String) -> String) -> BSONDocument {
        BSONDocument(
            document.elements.map { element in
                if personFields.contains(element.key) {
                    switch element.value {
                    case .string(let id): return (key: element.key, value: .string(replace(id)))
                    case .array(let values):
                        return (
                            key: element.key,
                            value: .array(values.map { $0.stringValue.map { .string(replace($0)) } ?? $0 })
                        )
                    default: return element
                    }
                }
                if let inner = element.value.documentValue {
                    return (key: element.key, value: .document(replacingPersons(in: inner, replace)))
                }
                return element
            })
    }

    /// `document` with every string, at any depth, passed through `replace`.
    static func replacingStrings(in document: BSONDocument, _ replace: (String) -> String) -> BSONDocument {
        func replaced(_ value: BSONValue) -> BSONValue {
            switch value {
            case .string(let text): .string(replace(text))
            case .array(let values): .array(values.map(replaced))
            case .document(let inner): .document(replacingStrings(in: inner, replace))
            default: value
            }
        }
        return BSONDocument(document.elements.map { (key: $0.key, value: replaced($0.value)) })
    }
}

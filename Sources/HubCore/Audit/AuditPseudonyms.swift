import Crypto
import DAO
import Foundation
import Mongo

/// The keyed hash that names a person, user or device where their id may not stay in clear (the audit log's entries,
/// an erasure's record, the block that keeps a roster sync from bringing an erased person back): HMAC-SHA256 of the
/// kind and the id with `AUDIT_PSEUDONYM_KEY`, or, when none is set, a key the hub made once and keeps in `settings`.
/// The same id gives the same pseudonym on every replica; without the key a pseudonym tells nothing of the id.
public actor AuditPseudonyms {
    private let configured: SymmetricKey?
    private let data: PersonDataDAO
    private var stored: SymmetricKey?

    /// Pseudonyms keyed with `key` (`AUDIT_PSEUDONYM_KEY`), or with the one kept in `database` when nil.
    public init(key: String?, database: MongoDatabase) {
        self.configured = key.map { SymmetricKey(data: Data($0.utf8)) }
        self.data = PersonDataDAO(database: database)
    }

    /// The pseudonym of `person` (64 hex digits).
    /// - Throws: `DAOError` when the stored key cannot be read.
    public func pseudonym(of person: String) async throws -> String {
        try await pseudonym(of: person, kind: .person)
    }

    /// The pseudonym of the `kind` with `id` (64 hex digits; a person's is the same as `pseudonym(of:)`).
    /// - Throws: `DAOError` when the stored key cannot be read.
    public func pseudonym(of id: String, kind: AuditSubject.Kind) async throws -> String {
        let key = try await self.key()
        return Hex.encode(HMAC<SHA256>.authenticationCode(for: Data((kind.rawValue + ":" + id).utf8), using: key))
    }

    private func key() async throws -> SymmetricKey {
        if let configured { return configured }
        if let stored { return stored }
        let key = SymmetricKey(data: try await data.storedPseudonymKey())
        stored = key
        return key
    }
}

import Crypto
import DAO
import Foundation

/// The keyed hash that names a person where their id may not stay (an erasure's record, the block that keeps a
/// roster sync from bringing them back): HMAC-SHA256 of the id with `AUDIT_PSEUDONYM_KEY`, or, when none is set, a key
/// the hub made once and keeps in `settings`. The same id gives the same pseudonym on every replica; without the key
/// a pseudonym tells nothing of the id.
public actor PersonPseudonyms {
    private let configured: SymmetricKey?
    private let data: PersonDataDAO
    private var stored: SymmetricKey?

    init(key: String?, data: PersonDataDAO) {
        self.configured = key.map { SymmetricKey(data: Data($0.utf8)) }
        self.data = data
    }

    /// The pseudonym of `person` (64 hex digits).
    /// - Throws: `DAOError` when the stored key cannot be read.
    public func pseudonym(of person: String) async throws -> String {
        let key = try await self.key()
        return HMAC<SHA256>.authenticationCode(for: Data(("person:" + person).utf8), using: key)
            .map { String(format: "%02x", $0) }.joined()
    }

    private func key() async throws -> SymmetricKey {
        if let configured { return configured }
        if let stored { return stored }
        let key = SymmetricKey(data: try await data.storedPseudonymKey())
        stored = key
        return key
    }
}

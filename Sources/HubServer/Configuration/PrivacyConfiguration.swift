import HubCore

/// What the hub keeps of persons and for how long (`AUDIT_PSEUDONYM_KEY`, `ERASURE_BLOCK_DAYS`).
public struct PrivacyConfiguration: Sendable, Equatable {
    /// The key of persons' keyed hashes (an erasure's record, the roster block); nil: one the hub makes once and
    /// keeps in its database.
    public var pseudonymKey: String?
    /// How long an erased person is kept out of rosters, in days (0: not at all).
    public var erasureBlockDays: Int

    public init(pseudonymKey: String? = nil, erasureBlockDays: Int = 0) {
        self.pseudonymKey = pseudonymKey
        self.erasureBlockDays = erasureBlockDays
    }

    /// The privacy configuration the environment gives.
    /// - Throws: `ConfigurationError` for a key shorter than 32 bytes or a number of days outside 0 to 3650.
    static func fromEnvironment(_ environment: [String: String]) throws -> PrivacyConfiguration {
        var privacy = PrivacyConfiguration()
        if let key = environment["AUDIT_PSEUDONYM_KEY"], !key.isEmpty {
            guard (32...4096).contains(key.utf8.count) else {
                throw ConfigurationError(
                    "AUDIT_PSEUDONYM_KEY must be 32 to 4096 bytes long (a random secret, set once)")
            }
            privacy.pseudonymKey = key
        }
        if let days = try environment.number("ERASURE_BLOCK_DAYS", in: 0...3650) { privacy.erasureBlockDays = days }
        return privacy
    }
}

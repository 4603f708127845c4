import DAO
import HubCore

/// What the hub keeps of persons and for how long (`AUDIT_PSEUDONYM_KEY`, `ERASURE_BLOCK_DAYS`, `RETENTION_*_DAYS`).
public struct PrivacyConfiguration: Sendable, Equatable {
    /// The key of persons' keyed hashes (an erasure's record, the roster block); nil: one the hub makes once and
    /// keeps in its database.
    public var pseudonymKey: String?
    /// How long an erased person is kept out of rosters, in days (0: not at all).
    public var erasureBlockDays: Int
    /// How long deliveries, receipts, messages and room posts are kept (`RETENTION_*_DAYS`; 0: kept).
    public var retention: RetentionLimits

    public init(pseudonymKey: String? = nil, erasureBlockDays: Int = 0, retention: RetentionLimits = RetentionLimits())
    {
        self.pseudonymKey = pseudonymKey
        self.erasureBlockDays = erasureBlockDays
        self.retention = retention
    }

    /// The privacy configuration the environment gives.
    /// - Throws: `ConfigurationError` for a key shorter than 32 bytes or a number of days out of range.
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
        var days: [RetentionDAO.Kind: Int] = [:]
        days[.deliveries] = try environment.number("RETENTION_DELIVERIES_DAYS", in: 0...36_500)
        days[.receipts] = try environment.number("RETENTION_RECEIPTS_DAYS", in: 0...36_500)
        days[.messages] = try environment.number("RETENTION_MESSAGES_DAYS", in: 0...36_500)
        days[.roomPosts] = try environment.number("RETENTION_ROOM_POSTS_DAYS", in: 0...36_500)
        privacy.retention = RetentionLimits(days: days.compactMapValues { $0 })
        return privacy
    }
}

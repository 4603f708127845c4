import Mongo

/// The approval rules as stored (`settings`, `_id: "approval"`): whether the default rules hold messages, the group
/// size past which a group send needs approval, and how long a request waits.
public struct StoredApprovalSettings: Sendable, Equatable {
    /// Whether the default rules apply (Forced subjects, `critical`, large audiences); marks always do.
    public var defaults: Bool
    /// An audience of more persons than this needs approval (when `defaults` is on).
    public var groupSize: Int64
    /// How long a request waits for its approval, in seconds.
    public var timeoutSeconds: Int64

    public init(defaults: Bool, groupSize: Int64, timeoutSeconds: Int64) {
        self.defaults = defaults
        self.groupSize = groupSize
        self.timeoutSeconds = timeoutSeconds
    }

    /// The stored fields.
    var fields: BSONDocument {
        ["defaults": .bool(defaults), "group_size": .int64(groupSize), "timeout_seconds": .int64(timeoutSeconds)]
    }

    /// The settings a stored document holds; nil when a field is missing or of the wrong type.
    init?(document: BSONDocument) {
        guard let defaults = document["defaults"]?.boolValue, let groupSize = document["group_size"]?.int64Value,
            let timeout = document["timeout_seconds"]?.int64Value
        else { return nil }
        self.init(defaults: defaults, groupSize: groupSize, timeoutSeconds: timeout)
    }
}

/// Settings an admin changes while the hub runs, one small document each in `settings`, so that every replica
/// applies the same rules (each follows the collection, `DatabaseFollower`). Each write is one update by `_id`.
public struct SettingsDAO: Sendable {
    let collection: MongoCollection

    /// The `_id` of the approval rules' document.
    static let approvalID = "approval"

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.settings)
    }

    /// The stored approval rules; nil before they were first stored.
    /// - Throws: `DAOError`.
    public func approval() async throws -> StoredApprovalSettings? {
        try await mapErrors {
            try await collection.findOne(["_id": .string(Self.approvalID)]).flatMap(
                StoredApprovalSettings.init(document:))
        }
    }

    /// Stores `settings` unless approval rules are stored already (the first start seeds them; a later start's
    /// environment changes nothing). One upsert with `$setOnInsert`.
    /// - Throws: `DAOError`.
    public func seedApproval(_ settings: StoredApprovalSettings, now: Int64) async throws {
        var fields = settings.fields
        fields["updated_at"] = .int64(now)
        fields["updated_by"] = .string("")
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(Self.approvalID)], ["$setOnInsert": .document(fields)],
                options: UpdateOptions(upsert: true))
        }
    }

    /// Replaces the approval rules with `settings`, naming who changed them and when. One upsert.
    /// - Throws: `DAOError`.
    public func setApproval(_ settings: StoredApprovalSettings, by user: String, now: Int64) async throws {
        var fields = settings.fields
        fields["updated_at"] = .int64(now)
        fields["updated_by"] = .string(user)
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(Self.approvalID)], ["$set": .document(fields)],
                options: UpdateOptions(upsert: true))
        }
    }
}

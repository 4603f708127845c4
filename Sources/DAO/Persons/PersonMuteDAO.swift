import HubTime
import Mongo

/// A group a person muted: until when (Unix ms), or for good (nil).
public struct PersonMute: Sendable, Equatable {
    public var group: String
    public var until: Int64?

    public init(group: String, until: Int64?) {
        self.group = group
        self.until = until
    }

    /// Whether the mute holds at `now` (Unix ms).
    public func holds(at now: Int64) -> Bool { until.map { $0 > now } ?? true }
}

/// The groups persons muted, in `person_mutes`: one document per (person, group), kept by the person, not the
/// device, so a mute holds on every device of the person, a new phone too. The fan-out reads a group's mutes for a
/// batch of its members as one range of the `group.person` index.
public struct PersonMuteDAO: Sendable {
    let collection: MongoCollection

    /// One mute per (person, group), a person's mutes in order; a group's muted members for the fan-out.
    static let indexes = [
        IndexModel(keys: ["person": 1, "group": 1], name: "person.group", unique: true),
        IndexModel(keys: ["group": 1, "person": 1], name: "group.person"),
    ]

    public init(database: MongoDatabase) {
        self.collection = database.collection(CollectionName.personMutes)
    }

    /// Mutes group `group` for `person` until `until` (Unix ms; nil: until unmuted), replacing a mute it had: one
    /// upsert on the `person.group` index.
    /// - Throws: `DAOError`.
    public func mute(_ group: String, for person: String, until: Int64?) async throws {
        do {
            _ = try await mapErrors {
                try await collection.updateOne(
                    ["person": .string(person), "group": .string(group)],
                    ["$set": ["until": until.map(BSONValue.int64) ?? .null]], options: UpdateOptions(upsert: true))
            }
        } catch let error as DAOError where error.code == .duplicate {
            // Two mutes of the same group at once: the other inserted it; this one's `until` wins.
            _ = try await mapErrors {
                try await collection.updateOne(
                    ["person": .string(person), "group": .string(group)],
                    ["$set": ["until": until.map(BSONValue.int64) ?? .null]])
            }
        }
    }

    /// Unmutes group `group` for `person`; returns whether it was muted.
    /// - Throws: `DAOError`.
    public func unmute(_ group: String, for person: String) async throws -> Bool {
        try await mapErrors {
            try await collection.deleteOne(["person": .string(person), "group": .string(group)])
        } > 0
    }

    /// `person`'s mutes that hold at `now`, by group id.
    /// - Throws: `DAOError`.
    public func mutes(of person: String, at now: Int64) async throws -> [PersonMute] {
        try await mapErrors {
            try await collection.find(
                ["person": .string(person)], options: FindOptions(sort: ["group": 1], limit: 1_000))
        }.compactMap(Self.mute(from:)).filter { $0.holds(at: now) }
    }

    /// Which of `persons` muted group `group` at `now`: one range of the `group.person` index, from the least of
    /// them to the greatest (in the database's byte order), the others left out here.
    /// - Throws: `DAOError`.
    public func muted(_ persons: [String], in group: String, at now: Int64) async throws -> Set<String> {
        let wanted = Set(persons)
        guard let range = KeyRange.bounds(of: wanted) else { return [] }
        let documents = try await mapErrors {
            try await collection.find(
                ["group": .string(group), "person": range],
                options: FindOptions(projection: ["person": 1, "until": 1, "_id": 0]))
        }
        var muted: Set<String> = []
        for document in documents {
            guard let person = document["person"]?.stringValue, wanted.contains(person) else { continue }
            if document["until"]?.int64Value.map({ $0 > now }) ?? true { muted.insert(person) }
        }
        return muted
    }

    /// A stored mute.
    static func mute(from document: BSONDocument) -> PersonMute? {
        guard let group = document["group"]?.stringValue else { return nil }
        return PersonMute(group: group, until: document["until"]?.int64Value)
    }
}

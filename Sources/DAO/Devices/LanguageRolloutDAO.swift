import HubTime
import Mongo

/// How far the one-time rollout of language topics got: the devices registered before the hub subscribed devices
/// to `lang-<code>` get theirs from a walk of the registry in id order (`LanguageRolloutPass` in the relay).
public struct LanguageRollout: Sendable, Equatable {
    /// The last device (by id) the walk is done with; nil: none yet.
    public var after: ObjectID?
    /// Every device registered before the walk ended has its language topic wanted: the walk never runs again.
    public var finished: Bool
}

/// The language rollout's progress, in `language_rollout`: one document, so every replica (whichever leads the
/// reconciler) continues where the last one stopped, and none starts it again once it finished. Each step is a
/// compare-and-set on `after`: a walk that lost the lead cannot move it back.
public struct LanguageRolloutDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The document's `_id`; a later change of how a locale maps to a topic would walk again under a new one.
    static let id: BSONValue = "lang-topics-1"

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.languageRollout)
        self.now = now
    }

    /// The rollout as stored, started (from the first device) when it never was.
    /// - Throws: `DAOError`.
    public func current() async throws -> LanguageRollout {
        let document: BSONDocument?
        do {
            document = try await mapErrors {
                try await collection.findOneAndUpdate(
                    ["_id": Self.id], ["$setOnInsert": ["started_at": .int64(now())]],
                    options: FindOneAndUpdateOptions(returnNew: true, upsert: true))
            }
        } catch let error as DAOError where error.code == .duplicate {
            // Two replicas started it at once: the other one's document is it.
            document = try await mapErrors { try await collection.findOne(["_id": Self.id]) }
        }
        return LanguageRollout(after: document?.objectID("after"), finished: document?["finished_at"] != nil)
    }

    /// Moves the rollout from `rollout` past the devices up to `device`; false when it moved meanwhile.
    /// - Throws: `DAOError`.
    public func advance(_ rollout: LanguageRollout, after device: ObjectID) async throws -> Bool {
        try await mapErrors {
            try await collection.updateOne(
                Self.filter(rollout), ["$set": ["after": .objectID(device), "updated_at": .int64(now())]])
        }.matchedCount > 0
    }

    /// Ends the rollout: every device registered before now has its language topic wanted, and every later one
    /// gets it at registration.
    /// - Throws: `DAOError`.
    public func finish(_ rollout: LanguageRollout) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(Self.filter(rollout), ["$set": ["finished_at": .int64(now())]])
        }
    }

    /// The document while it is still at `rollout` (unfinished, at the same `after`).
    private static func filter(_ rollout: LanguageRollout) -> BSONDocument {
        [
            "_id": id, "finished_at": ["$exists": false],
            "after": rollout.after.map { .objectID($0) } ?? ["$exists": false],
        ]
    }
}

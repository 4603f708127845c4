import HubTime
import Mongo

/// A subject every registered device should receive (a new Forced or Recommended one, or one turned Forced), on
/// its way to them: the reconciler walks the registry in id order, calls FCM for each device that has no wish
/// for the topic yet, records the wishes as applied behind the calls, and only then moves `after` on. What the
/// rollout has not reached yet shows as pending (`DeviceService`).
public struct TopicRollout: Sendable, Equatable {
    /// The subject's topic key.
    public var topic: String
    /// This run of the rollout: a topic rolled out again (turned Forced after being added) starts over, and a
    /// reconciler still at work on the earlier run can no longer move it.
    public var run: ObjectID
    /// The last device (by id) the rollout is done with; nil: none yet.
    public var after: ObjectID?
    /// The subject went away: the reconciler unwants the topic wherever the rollout recorded it, then ends it.
    public var cancelled: Bool

    public init(topic: String, run: ObjectID, after: ObjectID?, cancelled: Bool = false) {
        self.topic = topic
        self.run = run
        self.after = after
        self.cancelled = cancelled
    }

    init?(document: BSONDocument) {
        guard let topic = document["_id"]?.stringValue, let run = document.objectID("run") else { return nil }
        self.init(
            topic: topic, run: run, after: document.objectID("after"),
            cancelled: document["cancelled"]?.boolValue ?? false)
    }
}

/// The rollouts under way, in `subscription_rollouts`: one document per topic, so a subject's cube write costs
/// the database one command however many devices are registered, and its devices are reached at FCM's pace
/// rather than the database's.
public struct RolloutDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.rollouts)
        self.now = now
    }

    /// The one-time rollout of the devices' language topics, whose progress lives in the same database.
    public var languages: LanguageRolloutDAO {
        LanguageRolloutDAO(database: collection.pool.database(collection.databaseName), now: now)
    }

    /// Starts (or starts over) rolling `topic` out to every registered device.
    /// - Throws: `DAOError`.
    @discardableResult
    public func start(_ topic: String) async throws -> TopicRollout {
        let rollout = TopicRollout(topic: topic, run: ObjectID(), after: nil)
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(topic)],
                [
                    "$set": ["run": .objectID(rollout.run), "started_at": .int64(now())],
                    "$unset": ["after": "", "cancelled": ""],
                ],
                options: UpdateOptions(upsert: true))
        }
        return rollout
    }

    /// Every rollout, oldest first: those under way, and those cancelled that the reconciler has yet to end.
    public func all() async throws -> [TopicRollout] {
        try await mapErrors { try await collection.find([:], options: FindOptions(sort: ["started_at": 1])) }
            .compactMap(TopicRollout.init(document:))
    }

    /// The topics being rolled out (not cancelled).
    public func topicsUnderWay() async throws -> [TopicRollout] {
        try await all().filter { !$0.cancelled }
    }

    /// `rollout`'s run as stored now: nil when it ended or started over.
    public func current(_ rollout: TopicRollout) async throws -> TopicRollout? {
        try await mapErrors {
            try await collection.findOne(["_id": .string(rollout.topic), "run": .objectID(rollout.run)])
        }.flatMap(TopicRollout.init(document:))
    }

    /// Records that `rollout` is done with every device up to `device`; false when its run is over.
    public func advance(_ rollout: TopicRollout, after device: ObjectID) async throws -> Bool {
        try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(rollout.topic), "run": .objectID(rollout.run), "cancelled": ["$ne": true]],
                ["$set": ["after": .objectID(device), "updated_at": .int64(now())]])
        }.matchedCount > 0
    }

    /// Ends `rollout` once every device has it, unless it started over or was cancelled meanwhile (a cancelled
    /// one stays until `discard`, so its cleanup is never skipped).
    public func finish(_ rollout: TopicRollout) async throws {
        _ = try await mapErrors {
            try await collection.deleteOne([
                "_id": .string(rollout.topic), "run": .objectID(rollout.run),
                "cancelled": ["$ne": true],
            ])
        }
    }

    /// Ends a cancelled rollout once its topic is unwanted wherever it recorded it.
    public func discard(_ rollout: TopicRollout) async throws {
        _ = try await mapErrors {
            try await collection.deleteOne([
                "_id": .string(rollout.topic), "run": .objectID(rollout.run), "cancelled": true,
            ])
        }
    }

    /// Cancels the rollouts of topics that went away (`prefix` is a topic key when `exact`, else the start of the
    /// keys of a deleted channel or area). Kept, marked, until the reconciler has unwanted what a page in flight
    /// may record after this.
    public func cancel(prefix: String, exact: Bool) async throws {
        let topic: BSONValue = exact ? .string(prefix) : ["$regex": .string("^" + prefix)]
        _ = try await mapErrors {
            try await collection.updateMany(["_id": topic], ["$set": ["cancelled": true, "updated_at": .int64(now())]])
        }
    }
}

import HubTime
import Mongo

/// What each registration should be subscribed to at FCM, and whether FCM has it, in `device_subscriptions`:
/// one document per registration and topic (a unique index), with `want` (the hub's rule), `applied` (FCM's
/// state as last seen) and `pending` (the two differ: the reconciler's work).
///
/// Every change of `want` is one atomic update per document whatever its `applied` (updates with disjoint
/// filters), and the reconciler records what it applied conditionally on the `want` it applied, so a change made
/// while a call to FCM is in flight is never lost: the document stays pending. One process at a time applies
/// (the reconciler's `LeaseDAO` lease), so the documents carry no lease of their own: a subscription costs the
/// database one write when FCM has it, not three.
public struct SubscriptionDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    static let indexes = [
        IndexModel(keys: ["registration": 1, "topic": 1], name: "registration.topic", unique: true),
        IndexModel(keys: ["pending": 1, "due_at": 1], name: "pending.due_at"),
        // A topic's wishes (audiences, opt-outs, removals), and a rollout's page of them by device.
        IndexModel(keys: ["topic": 1, "device": 1], name: "topic.device"),
    ]

    /// Indexes of earlier versions that `indexes` replaces: dropped at start-up, so no write keeps paying for them.
    static let retiredIndexes = ["topic.want"]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.subscriptions)
        self.now = now
    }

    // MARK: What the hub wants

    /// Wants `topics` for `device`'s registration where no wish is recorded yet (an opt-out is kept).
    /// - Throws: `DAOError`.
    public func wantNew(_ topics: [String], for device: Device) async throws {
        try await insertMissing(topics.map { (device, $0) })
    }

    /// Sets `want` for `topics` of `device`'s registration, recording a wish where none was: an opt-out too, so
    /// a rollout that has not reached the device yet leaves it out. A wish recorded now is as wanted already: only
    /// the topics that had one are updated (a device's first choice of a topic costs one insert, not the insert and
    /// a bulk update).
    public func set(want: Bool, topics: [String], for device: Device) async throws {
        guard !topics.isEmpty else { return }
        let existing = try await insertMissing(topics.map { (device, $0) }, want: want)
        guard !existing.isEmpty else { return }
        try await setWant(
            want,
            where: [
                "registration": .string(device.registration),
                "topic": ["$in": .array(existing.map(BSONValue.string))],
            ])
    }

    /// Wants `topic` wherever it is unwanted (the opt-outs): a subject turned Forced. The devices with no wish
    /// for it are the rollout's (`RolloutDAO`).
    public func wantEverywhere(_ topic: String) async throws {
        try await setWant(true, where: ["topic": .string(topic), "want": false])
    }

    /// Unwants `topic` for `registration` and marks it gone (a rollout reached a device that was deleted, or
    /// whose registration changed, meanwhile).
    public func remove(_ topic: String, registration: String) async throws {
        try await setWant(false, where: ["registration": .string(registration), "topic": .string(topic)], gone: true)
    }

    /// Unwants every topic that starts with `prefix` (a deleted channel or area: `channel-` or `channel-area-`;
    /// a deleted subject: its whole topic key) and marks them gone, so the reconciler deletes each once FCM no
    /// longer has it.
    public func removeTopics(prefix: String, exact: Bool) async throws {
        let topic: BSONValue = exact ? .string(prefix) : ["$regex": .string("^" + prefix)]
        try await setWant(false, where: ["topic": topic], gone: true)
    }

    /// Unwants every topic of `registration` and marks them gone (a deleted device, an old token).
    public func removeRegistration(_ registration: String) async throws {
        try await setWant(false, where: ["registration": .string(registration)], gone: true)
    }

    /// Copies the wishes of `old` to `device`'s registration (FCM rotated the token) and removes the old ones.
    public func move(from old: String, to device: Device) async throws {
        guard old != device.registration else { return }
        let documents = try await mapErrors {
            try await collection.find(["registration": .string(old), "gone": ["$ne": true]])
        }
        let wishes = documents.compactMap(TopicSubscription.init(document:))
        // Their turns travel with them: the registration's device stays in the audiences it was in.
        var turns: [String: [WishRecord.Turn]] = [:]
        for document in documents {
            if let topic = document["topic"]?.stringValue { turns[topic] = WishRecord(document: document).turns }
        }
        try await insertMissing(wishes.filter(\.want).map { (device, $0.topic) }, turns: turns)
        let unwanted = wishes.filter { !$0.want }.map(\.topic)
        if !unwanted.isEmpty {
            // Opt-outs travel too, as wishes nobody applies.
            _ = try await mapErrors {
                try await collection.insertMany(
                    unwanted.map {
                        newDocument(device: device, topic: $0, want: false, turns: turns[$0] ?? [])
                    }, ordered: false)
            }
        }
        try await removeRegistration(old)
    }

    /// Gives the wishes of `device`'s registration to `device` (a known registration registered again without its
    /// device's secret: a new device takes them, and FCM, which knows the registration alone, keeps what it has).
    /// One update; the wishes themselves are left as they are.
    public func reassign(to device: Device) async throws {
        _ = try await mapErrors {
            try await collection.updateMany(
                ["registration": .string(device.registration), "device": ["$ne": .objectID(device.id)]],
                ["$set": ["device": .objectID(device.id), "platform": .string(device.platform.rawValue)]])
        }
    }

    /// Sets `want` on the documents matching `filter`, with `pending` right whatever each one's `applied`. A call to
    /// FCM in flight for one of them is recorded by the reconciler as what FCM then has, pending again where that
    /// differs from the new wish. Gone documents (`gone`) stay until the reconciler has removed them at FCM, even
    /// those FCM is not known to have: a call in flight may be adding them. Where `want` turns, the same update
    /// records the turn (`turns`), so the document tells when its registration was in a topic's audience. One bulk
    /// write of updates with disjoint filters.
    func setWant(_ want: Bool, where filter: BSONDocument, gone: Bool = false) async throws {
        let time = now()
        var settled: BSONDocument = ["want": .bool(want), "pending": false, "updated_at": .int64(time)]
        var unsettled: BSONDocument = [
            "want": .bool(want), "pending": true, "due_at": .int64(time), "attempts": 0,
            "updated_at": .int64(time),
        ]
        if gone { settled["gone"] = true; unsettled["gone"] = true }
        let cases: [(state: BSONDocument, set: BSONDocument)] = [
            // Already as wanted at FCM: nothing to apply (gone: the reconciler removes the document).
            (["applied": .bool(want)], gone ? unsettled : settled),
            // Not as wanted at FCM: the reconciler's work.
            (["applied": .bool(!want), "dormant": ["$ne": true]], unsettled),
            // A registration FCM called gone: recorded, applied if it registers again (`wake`).
            (["applied": .bool(!want), "dormant": true], settled),
        ]
        // Each case as the wish was: unchanged, or turning (a filter that names `want` has one of the two).
        let before = filter["want"]?.boolValue.map { [$0] } ?? [want, !want]
        let statements = cases.flatMap { state, set in
            before.map { was in
                var update: BSONDocument = ["$set": .document(set)]
                if was != want { update["$push"] = .document(Self.turn(to: want, at: time)) }
                return UpdateStatement(
                    filter: merging(merging(filter, state), ["want": .bool(was)]), update: update,
                    many: true)
            }
        }
        _ = try await mapErrors { try await collection.bulkUpdate(statements) }
    }

    /// How many turns of its wish a document keeps (`turns`, the newest): a registration that changed its mind more
    /// often since a message was sent can no longer show it was in that message's audience.
    static let turnsKept = 16

    /// The `$push` that records a turn of `want` at `time` (Unix ms) and keeps the newest `turnsKept`.
    static func turn(to want: Bool, at time: Int64) -> BSONDocument {
        [
            "turns": [
                "$each": .array([.document(WishRecord.Turn(at: time, want: want).document)]),
                "$slice": .int64(-Int64(turnsKept)),
            ]
        ]
    }

    // MARK: Rollouts

    /// The registrations with a wish for `topic`, either way (a rollout leaves them as they are), among the
    /// wishes of the devices from `first` through `last` (a rollout's page): one range of the `topic.device` index,
    /// so a page costs its own wishes, not every wish for the topic.
    public func registrations(wishing topic: String, devices first: ObjectID, through last: ObjectID) async throws
        -> Set<String>
    {
        let filter: BSONDocument = [
            "topic": .string(topic), "device": ["$gte": .objectID(first), "$lte": .objectID(last)],
        ]
        let documents = try await mapErrors {
            try await collection.find(filter, options: FindOptions(projection: ["registration": 1]))
        }
        return Set(documents.compactMap { $0["registration"]?.stringValue })
    }

    /// Records that FCM has each of `applied` (a rollout's calls), in inserts of `rolledOutPerInsert` (a server
    /// that holds its lock for a whole insert, as SecantusDB does, answers the calls' other commands between
    /// them). A device that got a wish for the topic meanwhile keeps that wish; where it is an opt-out made since
    /// `since` (Unix ms), what FCM has is recorded on it, pending, so the reconciler takes the subscription away.
    public func rolledOut(_ applied: [TopicSubscription], since: Int64) async throws {
        guard let topic = applied.first?.topic else { return }
        let time = now()
        var duplicates = false
        for start in stride(from: 0, to: applied.count, by: Self.rolledOutPerInsert) {
            let documents = applied[start..<min(start + Self.rolledOutPerInsert, applied.count)].map { subscription in
                var document = newDocument(subscription)
                document["applied"] = true
                document["pending"] = false
                return document
            }
            do {
                _ = try await mapErrors { try await collection.insertMany(documents, ordered: false) }
            } catch let error as DAOError where error.code == .duplicate {
                duplicates = true
            }
        }
        if duplicates {
            _ = try await mapErrors {
                try await collection.updateMany(
                    [
                        "topic": .string(topic), "want": false, "applied": false,
                        "gone": ["$ne": true], "updated_at": ["$gte": .int64(since)],
                    ],
                    ["$set": ["applied": true, "pending": true, "due_at": .int64(time)]])
            }
        }
    }

    /// How many records of a rollout one insert carries.
    static let rolledOutPerInsert = 256

    /// Records a rollout's wish that FCM could not take yet: pending, due at `dueAt` (Unix ms).
    public func wantLater(_ subscription: TopicSubscription, at dueAt: Int64, error: String) async throws {
        var document = newDocument(subscription)
        document["due_at"] = .int64(dueAt)
        document["attempts"] = 1
        document["last_error"] = .string(error)
        do {
            _ = try await mapErrors { try await collection.insertOne(document) }
        } catch let error as DAOError where error.code == .duplicate {
            // A wish recorded meanwhile decides.
        }
    }

    /// Inserts a wish for each pair that has none (a duplicate key means one exists: kept as it is); returns the
    /// topics of the pairs that had one, in their order.
    @discardableResult
    func insertMissing(_ pairs: [(Device, String)], want: Bool = true, turns: [String: [WishRecord.Turn]] = [:])
        async throws -> [String]
    {
        var existing: [String] = []
        for start in stride(from: 0, to: pairs.count, by: 1_000) {
            let slice = Array(pairs[start..<min(start + 1_000, pairs.count)])
            let documents = slice.map { newDocument(device: $0.0, topic: $0.1, want: want, turns: turns[$0.1]) }
            let refused = try await mapErrors { try await collection.insertManyIgnoringDuplicates(documents) }
            existing += refused.sorted().map { slice[$0].1 }
        }
        return existing
    }

    private func newDocument(device: Device, topic: String, want: Bool, turns: [WishRecord.Turn]? = nil)
        -> BSONDocument
    {
        newDocument(
            id: ObjectID(), device: device.id, registration: device.registration, platform: device.platform,
            topic: topic, want: want, turns: turns)
    }

    private func newDocument(_ subscription: TopicSubscription) -> BSONDocument {
        newDocument(
            id: subscription.id, device: subscription.device, registration: subscription.registration,
            platform: subscription.platform, topic: subscription.topic, want: subscription.want)
    }

    /// A new wish; one for the topic records its first turn (`turns`), unless `turns` carries an earlier
    /// registration's (a moved wish keeps when it was wanted).
    private func newDocument(
        id: ObjectID, device: ObjectID, registration: String, platform: Platform, topic: String,
        want: Bool, turns: [WishRecord.Turn]? = nil
    ) -> BSONDocument {
        let time = now()
        let turns = turns ?? (want ? [WishRecord.Turn(at: time, want: true)] : [])
        return [
            "_id": .objectID(id), "device": .objectID(device), "registration": .string(registration),
            "platform": .string(platform.rawValue), "topic": .string(topic), "want": .bool(want),
            "applied": false, "pending": .bool(want), "due_at": .int64(time), "attempts": 0,
            "updated_at": .int64(time), "turns": .array(turns.map { .document($0.document) }),
        ]
    }

    private func merging(_ a: BSONDocument, _ b: BSONDocument) -> BSONDocument {
        var result = a
        for (key, value) in b { result[key] = value }
        return result
    }

    // MARK: Reading

    /// The topics `device`'s registration is meant to receive, each with whether FCM has it yet.
    public func wanted(by device: Device) async throws -> [TopicSubscription] {
        try await mapErrors {
            try await collection.find(
                ["registration": .string(device.registration), "want": true],
                options: FindOptions(sort: ["topic": 1]))
        }.compactMap(TopicSubscription.init(document:))
    }

    /// Every wish recorded for `device`'s registration, opt-outs included.
    public func all(of device: Device) async throws -> [TopicSubscription] {
        try await mapErrors {
            try await collection.find(["registration": .string(device.registration), "gone": ["$ne": true]])
        }
        .compactMap(TopicSubscription.init(document:))
    }

    /// How the wishes for one topic stand on one platform.
    public struct TopicWishes: Sendable, Equatable {
        /// Devices that want it and that FCM has.
        public var applied = 0
        /// Devices that want it and that FCM does not have yet.
        public var pending = 0
        /// Devices that opted out.
        public var unwanted = 0

        /// Devices with a wish either way.
        public var recorded: Int { applied + pending + unwanted }

        public init() {}
    }

    /// The wishes for `topic` per platform, gone and sleeping ones left out, counted by one aggregation so the
    /// numbers agree with each other while a rollout records more.
    public func wishes(for topic: String) async throws -> [Platform: TopicWishes] {
        let rows = try await mapErrors {
            try await collection.aggregate([
                ["$match": ["topic": .string(topic), "gone": ["$ne": true], "dormant": ["$ne": true]]],
                [
                    "$group": [
                        "_id": ["platform": "$platform", "want": "$want", "applied": "$applied"], "count": ["$sum": 1],
                    ]
                ],
            ])
        }
        var result: [Platform: TopicWishes] = [:]
        for row in rows {
            guard case .document(let key)? = row["_id"], let platform = Platform(rawValue: key.string("platform"))
            else { continue }
            let count = Int(row["count"]?.int64Value ?? 0)
            switch (key["want"]?.boolValue ?? false, key["applied"]?.boolValue ?? false) {
            case (true, true): result[platform, default: TopicWishes()].applied += count
            case (true, false): result[platform, default: TopicWishes()].pending += count
            case (false, _): result[platform, default: TopicWishes()].unwanted += count
            }
        }
        return result
    }

    /// For every topic, how many devices will receive it (one aggregation, for pages that list many subjects).
    public func audienceSizes() async throws -> [String: Int] {
        let rows = try await mapErrors {
            try await collection.aggregate([
                ["$match": ["want": true, "dormant": ["$ne": true]]],
                ["$group": ["_id": "$topic", "devices": ["$sum": 1]]],
            ])
        }
        var sizes: [String: Int] = [:]
        for row in rows {
            guard let topic = row["_id"]?.stringValue else { continue }
            sizes[topic] = Int(row["devices"]?.int64Value ?? 0)
        }
        return sizes
    }

    /// How many subscriptions wait for the reconciler, and since when (Unix ms) the oldest waits.
    public func backlog() async throws -> (count: Int, oldestDueAt: Int64?) {
        let count = try await mapErrors { try await collection.countDocuments(["pending": true]) }
        let oldest = try await mapErrors {
            try await collection.findOne(["pending": true], projection: ["due_at": 1], sort: ["due_at": 1])
        }
        return (Int(count), oldest?["due_at"]?.int64Value)
    }

    // MARK: The reconciler

    /// Up to `limit` due pending subscriptions, for the process that holds the reconciler's lease. No sort: the
    /// `pending.due_at` index gives the oldest first, and a sort would make a server that cannot use the index for
    /// it (SecantusDB) sort the whole backlog every time.
    public func due(limit: Int) async throws -> [TopicSubscription] {
        let due: BSONDocument = ["pending": true, "due_at": ["$lte": .int64(now())]]
        return try await mapErrors {
            try await collection.find(due, options: FindOptions(limit: Int64(limit)))
        }.compactMap(TopicSubscription.init(document:))
    }

    /// Records that FCM now has each of `batch` as it was read (`want`), `IDChunks.perCommand` subscriptions a
    /// command: settled where the wish is still the one applied, pending again where it changed meanwhile
    /// (recording what FCM has); gone ones FCM no longer has are deleted. Dormant ones (FCM called their
    /// registration gone since) are left as they are: FCM has nothing for them.
    public func applied(_ batch: [TopicSubscription]) async throws {
        guard !batch.isEmpty else { return }
        let time = now()
        let removals = batch.filter { !$0.want }.map(\.id)
        for chunk in IDChunks.of(removals) {
            _ = try await mapErrors {
                try await collection.deleteMany(["_id": IDChunks.membership(chunk), "want": false, "gone": true])
            }
        }
        for want in [true, false] {
            for chunk in IDChunks.of(batch.filter { $0.want == want }.map(\.id)) {
                let ids = IDChunks.membership(chunk)
                let settled = try await mapErrors {
                    try await collection.updateMany(
                        ["_id": ids, "want": .bool(want), "dormant": ["$ne": true]],
                        [
                            "$set": [
                                "applied": .bool(want), "pending": false, "attempts": 0,
                                "updated_at": .int64(time),
                            ],
                            "$unset": ["last_error": ""],
                        ])
                }
                guard settled.matchedCount < Int64(chunk.count) else { continue }
                // The wish changed while FCM was called: what FCM has is recorded, and the document is pending.
                _ = try await mapErrors {
                    try await collection.updateMany(
                        ["_id": ids, "want": .bool(!want), "dormant": ["$ne": true]],
                        ["$set": ["applied": .bool(want), "pending": true, "due_at": .int64(time)]])
                }
            }
        }
    }

    /// Puts `subscription` back for a retry at `dueAt` (Unix ms), noting the error.
    public func retry(_ subscription: TopicSubscription, at dueAt: Int64, error: String) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .objectID(subscription.id)],
                [
                    "$set": [
                        "due_at": .int64(dueAt), "last_error": .string(error),
                        "updated_at": .int64(now()),
                    ],
                    "$inc": ["attempts": 1],
                ])
        }
    }

    /// Stops work on `registration` (FCM says it is gone): what is gone is deleted, the rest sleeps until the
    /// device registers again (`wake`).
    public func sleep(registration: String) async throws {
        _ = try await mapErrors {
            try await collection.deleteMany(["registration": .string(registration), "gone": true])
            try await collection.updateMany(
                ["registration": .string(registration)],
                ["$set": ["dormant": true, "pending": false, "applied": false]])
        }
    }

    /// Wakes the wishes of a registration that registered again: what is wanted is applied again.
    public func wake(registration: String) async throws {
        let time = now()
        _ = try await mapErrors {
            try await collection.updateMany(
                ["registration": .string(registration), "dormant": true],
                ["$unset": ["dormant": ""]])
            try await collection.updateMany(
                ["registration": .string(registration), "want": true, "applied": false],
                ["$set": ["pending": true, "due_at": .int64(time), "attempts": 0]])
        }
    }

    /// Records that FCM has (or lacks) `topic` for `registration` although the hub thought otherwise (the periodic
    /// repair): the document becomes pending again where FCM differs from the wish.
    public func observed(registration: String, topics atFCM: Set<String>, for device: Device) async throws {
        let time = now()
        let known = try await all(of: device)
        for subscription in known where subscription.registration == registration {
            let present = atFCM.contains(subscription.topic)
            guard present != subscription.applied else { continue }
            _ = try await mapErrors {
                try await collection.updateOne(
                    ["_id": .objectID(subscription.id)],
                    [
                        "$set": [
                            "applied": .bool(present), "pending": .bool(present != subscription.want),
                            "due_at": .int64(time),
                        ]
                    ])
            }
        }
        // Topics FCM has that the hub never recorded: unwanted, to be removed.
        let recorded = Set(known.map(\.topic))
        let strays = atFCM.subtracting(recorded)
        if !strays.isEmpty {
            var documents: [BSONDocument] = []
            for topic in strays {
                var document = newDocument(device: device, topic: topic, want: false)
                document["applied"] = true
                document["pending"] = true
                document["gone"] = true
                documents.append(document)
            }
            _ = try? await mapErrors { try await collection.insertMany(documents, ordered: false) }
        }
    }
}

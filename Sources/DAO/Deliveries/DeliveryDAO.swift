import HubTime
import Mongo

/// The per-device deliveries of messages to persons and groups, in `deliveries`: one document per (message,
/// device), written once, when FCM has answered the device's send, with the answer (answers go in bulk).
///
/// A device without a document has not been answered: a later attempt at the message (another worker took it
/// over, FCM asked to wait) resolves the message again and sends only to devices with no answer, or with a pending
/// one (`answered`). A delivery's `_id` is "<message _id hex>/<device id hex>", so an answer is never stored twice,
/// and a message's deliveries are read on the `message._id` index (the report's pages and counts, the escalation's
/// rounds).
public struct DeliveryDAO: Sendable {
    let deliveries: MongoCollection
    let messages: MongoCollection
    let now: UnixClock

    /// A message's deliveries in `_id` order: what its report, its counts and its escalation's rounds read. A range
    /// of the `_id` index would serve them without an index of their own on MongoDB, but the embedded database answers
    /// a range of string `_id`s by reading the whole collection (2.4 s at 20,000 deliveries), every message's
    /// deliveries of the year. The index costs each delivery's insert a little (measured in `make bench`'s fan-out).
    static let indexes = [IndexModel(keys: ["message": 1, "_id": 1], name: "message._id")]

    /// `message.state` was an index until the deliveries were written once.
    static let retiredIndexes = ["message.state"]

    /// How many deliveries one insert carries.
    static let perInsert = 1_000

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.deliveries = database.collection(CollectionName.deliveries)
        self.messages = database.collection(CollectionName.message)
        self.now = now
    }

    // MARK: Resolving

    /// Notes on message `id`, while `lease` holds it, that its resolution begins (its first deliveries may be sent
    /// before the last devices are found: a later attempt must look for answers before it sends); false when the
    /// lease no longer holds it.
    /// - Throws: `DAOError`.
    public func markResolving(message id: ObjectID, lease: String) async throws -> Bool {
        let result = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "relay.lease_owner": .string(lease)],
                ["$set": ["relay.components.devices.resolving": true]])
        }
        return result.matchedCount > 0
    }

    /// Notes on message `id`, while `lease` holds it, that it reaches `count` devices (every one of them found), for
    /// the report's count of those not answered yet; false when the lease no longer holds it.
    /// - Throws: `DAOError`.
    public func markResolved(message id: ObjectID, lease: String, count: Int) async throws -> Bool {
        let result = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "relay.lease_owner": .string(lease)],
                [
                    "$set": [
                        "relay.components.devices.resolved": true,
                        "relay.components.devices.devices": .int64(Int64(count)),
                        "relay.components.devices.resolved_at": .int64(now()),
                    ]
                ])
        }
        return result.matchedCount > 0
    }

    /// Which of the deliveries `ids` have an answer for good (sent, failed, unregistered), read `IDChunks.perCommand`
    /// at a time: what a later attempt at a message leaves out.
    /// - Throws: `DAOError`.
    public func answered(_ ids: [String]) async throws -> Set<String> {
        var found: Set<String> = []
        for chunk in IDChunks.of(ids) {
            // The `_id`s alone, on the `_id` index, and the state checked here.
            let documents = try await mapErrors {
                try await deliveries.find(
                    ["_id": ["$in": .array(chunk.map(BSONValue.string))]],
                    options: FindOptions(projection: ["_id": 1, "state": 1]))
            }
            for document in documents where document.string("state") != Delivery.State.pending.rawValue {
                if let id = document["_id"]?.stringValue { found.insert(id) }
            }
        }
        return found
    }

    // MARK: Answers

    /// Records FCM's answers: each delivery inserted with its answer (unordered, `perInsert` a command); one stored
    /// already (a pending answer of an earlier attempt, or an answer a worker wrote before it died) is updated in
    /// one bulk write, one statement per outcome (and code), only while it is pending or deferred (a quiet device's
    /// held-back send answered): the first answer for good stays. A pending outcome notes FCM's code and leaves the
    /// device to a later attempt. Returns how many
    /// deliveries were stored or changed.
    /// - Throws: `DAOError`.
    @discardableResult
    public func record(_ outcomes: [DeliveryOutcome]) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        let time = now()
        var stored: [DeliveryOutcome] = []
        var changed = 0
        for start in stride(from: 0, to: outcomes.count, by: Self.perInsert) {
            let slice = Array(outcomes[start..<min(start + Self.perInsert, outcomes.count)])
            let refused = try await mapErrors {
                try await deliveries.insertManyIgnoringDuplicates(slice.map { $0.document(at: time) })
            }
            changed += slice.count - refused.count
            stored += refused.sorted().map { slice[$0] }
        }
        guard !stored.isEmpty else { return changed }
        struct Key: Hashable { var state: Delivery.State; var code: String? }
        var groups: [Key: [String]] = [:]
        var order: [Key] = []
        for outcome in stored {
            let key = Key(state: outcome.state, code: outcome.code)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(outcome.id)
        }
        var statements: [UpdateStatement] = []
        for key in order {
            var set: BSONDocument = ["state": .string(key.state.rawValue)]
            if key.state != .pending { set["at"] = .int64(time) }
            if let code = key.code { set["code"] = .string(code) }
            for chunk in IDChunks.of(groups[key] ?? []) {
                statements.append(
                    UpdateStatement(
                        filter: [
                            "_id": ["$in": .array(chunk.map(BSONValue.string))],
                            "state": ["$in": ["pending", "deferred"]],
                        ],
                        update: ["$set": .document(set)], many: true))
            }
        }
        let result = try await mapErrors { try await deliveries.bulkUpdate(statements) }
        return changed + Int(result.modifiedCount)
    }

    // MARK: Reading

    /// `message`'s deliveries counted by state and platform (one aggregation over its range of the `message._id` index).
    /// - Throws: `DAOError`.
    public func counts(of message: ObjectID) async throws -> DeliveryCounts {
        let rows = try await mapErrors {
            try await deliveries.aggregate([
                ["$match": .document(Self.range(of: message))],
                [
                    "$group": [
                        "_id": ["state": "$state", "platform": "$platform"], "n": ["$sum": 1],
                        "held": ["$sum": ["$cond": [["$eq": ["$held", true]], 1, 0]]],
                    ]
                ],
            ])
        }
        var counts = DeliveryCounts(byState: Dictionary(uniqueKeysWithValues: Delivery.State.allCases.map { ($0, 0) }))
        for row in rows {
            guard let key = row["_id"]?.documentValue, let state = Delivery.State(rawValue: key.string("state")),
                let n = row["n"]?.int64Value
            else { continue }
            counts.byState[state, default: 0] += n
            counts.held += row["held"]?.int64Value ?? 0
            if let platform = Platform(rawValue: key.string("platform")) {
                counts.byPlatform[
                    platform,
                    default: Dictionary(
                        uniqueKeysWithValues: Delivery.State.allCases.map { ($0, 0) })][state, default: 0] += n
            }
        }
        return counts
    }

    /// How many distinct persons `message`'s deliveries reach (one aggregation over its range of the `message._id` index);
    /// deliveries that name no person (a topic's devices) are not counted.
    /// - Throws: `DAOError`.
    public func personCount(of message: ObjectID) async throws -> Int64 {
        var match = Self.range(of: message)
        match["person"] = ["$gt": ""]
        let rows = try await mapErrors {
            try await deliveries.aggregate([
                ["$match": .document(match)],
                ["$group": ["_id": "$person"]],
                ["$group": ["_id": .null, "n": ["$sum": 1]]],
            ])
        }
        return rows.first?["n"]?.int64Value ?? 0
    }

    /// Up to `limit` deliveries of `message` after the `_id` `after` (nil: from the first), in `_id` order: a page of
    /// the delivery report, read on the `message._id` index (a stored delivery holds no registration).
    /// - Throws: `DAOError`.
    public func page(of message: ObjectID, after: String?, limit: Int) async throws -> [Delivery] {
        let filter = Self.range(of: message, after: after)
        return try await mapErrors {
            try await deliveries.find(filter, options: FindOptions(sort: ["_id": 1], limit: Int64(max(limit, 1))))
        }.compactMap(Delivery.init(document:))
    }

    /// The filter of `message`'s deliveries after the `_id` `after` (nil: all of them), `message` first: the embedded
    /// database plans by the first indexed field it meets.
    static func range(of message: ObjectID, after: String? = nil) -> BSONDocument {
        guard let after else { return ["message": .objectID(message)] }
        return ["message": .objectID(message), "_id": ["$gt": .string(after)]]
    }
}

import HubTime
import Mongo

/// The per-device deliveries of messages to persons and groups, in `deliveries`: one document per (message,
/// device), inserted when the relay resolves the message and answered in bulk as FCM answers.
///
/// A delivery's `_id` is "<message _id hex>/<device id hex>", so resolving again (another worker took a message
/// over) inserts only what is missing, and a message's deliveries lie together in the `_id` index (the report's
/// pages read it alone).
public struct DeliveryDAO: Sendable {
    let deliveries: MongoCollection
    let messages: MongoCollection
    let now: UnixClock

    /// A message's pending deliveries in order (the relay's pages) and its counts by state.
    static let indexes = [IndexModel(keys: ["message": 1, "state": 1, "_id": 1], name: "message.state")]

    /// How many deliveries one insert carries.
    static let perInsert = 1_000

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.deliveries = database.collection(CollectionName.deliveries)
        self.messages = database.collection(CollectionName.message)
        self.now = now
    }

    // MARK: Resolving

    /// Inserts `list` (unordered, `perInsert` a command); a delivery stored already is kept as it is.
    /// - Throws: `DAOError`.
    public func insert(_ list: [Delivery]) async throws {
        for start in stride(from: 0, to: list.count, by: Self.perInsert) {
            let documents = list[start..<min(start + Self.perInsert, list.count)].map(\.document)
            do {
                _ = try await mapErrors { try await deliveries.insertMany(documents, ordered: false) }
            } catch let error as DAOError where error.code == .duplicate {
                // The others were inserted (unordered); the duplicates are deliveries a resolution stored before.
            }
        }
    }

    /// Notes on message `id`, while `lease` holds it, that its resolution begins (its first deliveries may be sent
    /// before the last are stored: a later attempt must not take them all for unsent); false when the lease no longer
    /// holds it.
    /// - Throws: `DAOError`.
    public func markResolving(message id: ObjectID, lease: String) async throws -> Bool {
        let result = try await mapErrors {
            try await messages.updateOne(["_id": .objectID(id), "relay.lease_owner": .string(lease)],
                                         ["$set": ["relay.components.devices.resolving": true]])
        }
        return result.matchedCount > 0
    }

    /// Notes on message `id`, while `lease` holds it, that its deliveries are stored (`count` of them), so that
    /// no later attempt resolves it again; false when the lease no longer holds it.
    /// - Throws: `DAOError`.
    public func markResolved(message id: ObjectID, lease: String, count: Int) async throws -> Bool {
        let result = try await mapErrors {
            try await messages.updateOne(
                ["_id": .objectID(id), "relay.lease_owner": .string(lease)],
                ["$set": ["relay.components.devices.resolved": true,
                          "relay.components.devices.devices": .int64(Int64(count)),
                          "relay.components.devices.resolved_at": .int64(now())]])
        }
        return result.matchedCount > 0
    }

    /// Up to `limit` pending deliveries of `message` after the `_id` `after`, in `_id` order, with their
    /// registrations: what the relay sends next.
    /// - Throws: `DAOError`.
    public func pending(of message: ObjectID, after: String?, limit: Int) async throws -> [Delivery] {
        var filter: BSONDocument = ["message": .objectID(message), "state": "pending"]
        if let after { filter["_id"] = ["$gt": .string(after)] }
        return try await mapErrors {
            try await deliveries.find(filter, options: FindOptions(sort: ["_id": 1], limit: Int64(max(limit, 1))))
        }.compactMap(Delivery.init(document:))
    }

    // MARK: Answers

    /// Records FCM's answers in one bulk write: one statement per outcome (and code), `IDChunks.perCommand`
    /// deliveries a statement, each on a delivery still pending (the first answer stays). A pending outcome keeps
    /// the delivery pending and notes FCM's code. Returns how many deliveries changed.
    /// - Throws: `DAOError`.
    @discardableResult
    public func record(_ outcomes: [DeliveryOutcome]) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        let time = now()
        struct Key: Hashable { var state: Delivery.State; var code: String? }
        var groups: [Key: [String]] = [:]
        var order: [Key] = []
        for outcome in outcomes {
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
                statements.append(UpdateStatement(
                    filter: ["_id": ["$in": .array(chunk.map(BSONValue.string))], "state": "pending"],
                    update: ["$set": .document(set)], many: true))
            }
        }
        let result = try await mapErrors { try await deliveries.bulkUpdate(statements) }
        return Int(result.modifiedCount)
    }

    // MARK: Reading

    /// `message`'s deliveries counted by state and platform (one aggregation on the `message.state` index).
    /// - Throws: `DAOError`.
    public func counts(of message: ObjectID) async throws -> DeliveryCounts {
        let rows = try await mapErrors {
            try await deliveries.aggregate([
                ["$match": ["message": .objectID(message)]],
                ["$group": ["_id": ["state": "$state", "platform": "$platform"], "n": ["$sum": 1]]],
            ])
        }
        var counts = DeliveryCounts(byState: Dictionary(uniqueKeysWithValues: Delivery.State.allCases.map { ($0, 0) }))
        for row in rows {
            guard let key = row["_id"]?.documentValue, let state = Delivery.State(rawValue: key.string("state")),
                  let n = row["n"]?.int64Value else { continue }
            counts.byState[state, default: 0] += n
            if let platform = Platform(rawValue: key.string("platform")) {
                counts.byPlatform[platform, default: Dictionary(
                    uniqueKeysWithValues: Delivery.State.allCases.map { ($0, 0) })][state, default: 0] += n
            }
        }
        return counts
    }

    /// Up to `limit` deliveries of `message` after the `_id` `after` (nil: from the first), in `_id` order, without
    /// their registrations: a page of the delivery report, read from the `_id` index alone.
    /// - Throws: `DAOError`.
    public func page(of message: ObjectID, after: String?, limit: Int) async throws -> [Delivery] {
        // Every `_id` of the message starts "<hex>/"; "0" is the character after "/".
        let lower = after.map { max($0, "\(message.hex)/") } ?? "\(message.hex)/"
        let filter: BSONDocument = ["_id": ["$gt": .string(lower), "$lt": .string("\(message.hex)0")]]
        return try await mapErrors {
            try await deliveries.find(filter, options: FindOptions(projection: ["registration": 0], sort: ["_id": 1],
                                                                   limit: Int64(max(limit, 1))))
        }.compactMap(Delivery.init(document:))
    }
}

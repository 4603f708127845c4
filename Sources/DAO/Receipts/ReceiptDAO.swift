import HubTime
import Mongo

/// The receipts of messages (`receipts`) and their counts per message (`receipt_counts`).
///
/// A receipt's `_id` is "<message _id hex>/<device id hex>/<event>", so a device reporting again stores nothing
/// twice, and a message's receipts lie together in the `_id` index. The counts are kept as receipts arrive: each
/// insert's own write errors say which receipts are new, and only those are added, by `$inc` in one bulk write per
/// batch (never a read-modify-write), so the reach report reads one document however many receipts there are.
public struct ReceiptDAO: Sendable {
    let receipts: MongoCollection
    let counts: MongoCollection
    let now: UnixClock

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.receipts = database.collection(CollectionName.receipts)
        self.counts = database.collection(CollectionName.receiptCounts)
        self.now = now
    }

    /// Where a topic message's channel and area are, noted on its counts (hex ids from its `topic_key`).
    public struct Place: Sendable, Equatable {
        public var channel: String, area: String

        public init(channel: String, area: String) {
            self.channel = channel
            self.area = area
        }
    }

    /// Stores `list` in one unordered insert and counts the receipts that are new; returns, for each receipt in
    /// order, whether it was new (false: the device had reported that event of that message before). `places` gives
    /// the channel and area of topic messages, by message `_id`.
    /// - Throws: `DAOError`.
    public func store(_ list: [Receipt], places: [ObjectID: Place] = [:]) async throws -> [Bool] {
        guard !list.isEmpty else { return [] }
        let time = now()
        let refused = try await mapErrors {
            try await receipts.insertManyIgnoringDuplicates(list.map { $0.document(storedAt: time) })
        }
        let new = list.indices.map { !refused.contains($0) }
        try await count(list.indices.filter { new[$0] }.map { list[$0] }, places: places)
        return new
    }

    /// Adds `stored` (receipts newly stored) to their messages' counts: one upsert per message, all in one bulk write.
    private func count(_ stored: [Receipt], places: [ObjectID: Place]) async throws {
        guard !stored.isEmpty else { return }
        var increments: [ObjectID: [String: Int64]] = [:]
        var order: [ObjectID] = []
        for receipt in stored {
            if increments[receipt.message] == nil { order.append(receipt.message) }
            var paths = increments[receipt.message, default: [:]]
            paths["events.\(receipt.event.rawValue)", default: 0] += 1
            paths["platforms.\(receipt.platform.rawValue).\(receipt.event.rawValue)", default: 0] += 1
            if receipt.event == .acknowledged, let response = receipt.response {
                paths["responses.\(ResponseKey.encode(response))", default: 0] += 1
            }
            increments[receipt.message] = paths
        }
        let statements = order.map { message in
            let paths = (increments[message] ?? [:]).sorted { $0.key < $1.key }
            var update: BSONDocument = ["$inc": .document(BSONDocument(paths.map { (key: $0.key, value: .int64($0.value)) }))]
            if let place = places[message] {
                update["$setOnInsert"] = ["channel": .string(place.channel), "area": .string(place.area)]
            }
            return UpdateStatement(filter: ["_id": .objectID(message)], update: update,
                                   options: UpdateOptions(upsert: true))
        }
        _ = try await mapErrors { try await counts.bulkUpdate(statements) }
    }

    /// The counts of `message`'s receipts (zeros when it has none): one document read.
    /// - Throws: `DAOError`.
    public func counts(of message: ObjectID) async throws -> ReceiptCounts {
        ReceiptCounts(document: try await mapErrors { try await counts.findOne(["_id": .objectID(message)]) })
    }

    /// Which of `devices` have acknowledged `message`: who has answered, for the report's list of those who have not
    /// and for re-sends. Read by `_id`, `IDChunks.perCommand` devices a command.
    /// - Throws: `DAOError`.
    public func acknowledged(message: ObjectID, devices: [ObjectID]) async throws -> Set<ObjectID> {
        try await reported(.acknowledged, message: message, devices: devices)
    }

    /// Which of `devices` have reported `event` of `message`.
    /// - Throws: `DAOError`.
    public func reported(_ event: Receipt.Event, message: ObjectID, devices: [ObjectID]) async throws -> Set<ObjectID> {
        var found: Set<ObjectID> = []
        for chunk in IDChunks.of(devices) {
            let ids = chunk.map { BSONValue.string(Receipt.id(message: message, device: $0, event: event)) }
            let documents = try await mapErrors {
                try await receipts.find(["_id": ["$in": .array(ids)]], options: FindOptions(projection: ["device": 1]))
            }
            for document in documents { if let device = document.objectID("device") { found.insert(device) } }
        }
        return found
    }
}

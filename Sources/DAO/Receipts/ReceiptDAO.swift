import HubTime
import Mongo

/// The receipts of messages (`receipts`) and their counts per message (`receipt_counts`).
///
/// A receipt's `_id` is "<message _id hex>/<device id hex>/<event>", so a device reporting again stores nothing
/// twice, and a message's receipts lie together in the `_id` index. The counts are kept as receipts arrive: each
/// insert's own write errors say which receipts are new, and only those are added, by `$inc` (never a
/// read-modify-write), so the reach report reads one document however many receipts there are.
///
/// A batch is counted in three writes so that a process dying half-way loses no count: (1) the batch's id and its
/// receipts' `_id`s are pushed onto each message's counts (`pending`); (2) the receipts are inserted, each naming
/// the batch; (3) one update per message adds the new receipts and pulls the batch from `pending`, only while it is
/// there, so the counting happens once. A batch left in `pending` (the process died between the writes) is counted
/// by `recountInterrupted`: the receipts that name it are the ones it stored.
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
        let batch = ObjectID().hex
        try await notePending(batch, list, places: places, at: time)
        let refused = try await mapErrors {
            try await receipts.insertManyIgnoringDuplicates(list.map { $0.document(storedAt: time, batch: batch) })
        }
        let new = list.indices.map { !refused.contains($0) }
        let stored = list.indices.filter { new[$0] }.map { list[$0] }
        try await fold(batch, counting: stored, messages: Self.messages(of: list))
        return new
    }

    /// The messages of `list`, each once, in the order they first appear.
    private static func messages(of list: [Receipt]) -> [ObjectID] {
        var seen: Set<ObjectID> = []
        return list.map(\.message).filter { seen.insert($0).inserted }
    }

    /// Write (1): `batch` and its receipts' `_id`s pushed onto the counts of each of their messages (one upsert per
    /// message, in one bulk write), before any receipt is stored.
    private func notePending(_ batch: String, _ list: [Receipt], places: [ObjectID: Place], at time: Int64)
        async throws
    {
        var ids: [ObjectID: [BSONValue]] = [:]
        for receipt in list { ids[receipt.message, default: []].append(.string(receipt.id)) }
        let statements = Self.messages(of: list).map { message in
            var update: BSONDocument = [
                "$push": [
                    "pending": [
                        "batch": .string(batch), "receipts": .array(ids[message] ?? []), "at": .int64(time),
                    ]
                ]
            ]
            if let place = places[message] {
                update["$setOnInsert"] = ["channel": .string(place.channel), "area": .string(place.area)]
            }
            return UpdateStatement(
                filter: ["_id": .objectID(message)], update: update,
                options: UpdateOptions(upsert: true))
        }
        _ = try await mapErrors { try await counts.bulkUpdate(statements) }
    }

    /// Write (3): `stored` (the receipts `batch` stored) added to the counts of `messages`, and the batch pulled
    /// from their `pending`, by one update per message that matches only while the batch is pending: whoever folds
    /// a batch first (the store, or a recount after a crash) counts it, and nobody again.
    private func fold(_ batch: String, counting stored: [Receipt], messages: [ObjectID]) async throws {
        var increments: [ObjectID: [String: Int64]] = [:]
        for receipt in stored {
            var paths = increments[receipt.message, default: [:]]
            paths["events.\(receipt.event.rawValue)", default: 0] += 1
            paths["platforms.\(receipt.platform.rawValue).\(receipt.event.rawValue)", default: 0] += 1
            if receipt.event == .acknowledged, let response = receipt.response {
                // Free text is one bucket: only the few responses a message offers name fields.
                let path = receipt.responseOffered ? "responses.\(ResponseKey.encode(response))" : "free_text"
                paths[path, default: 0] += 1
            }
            increments[receipt.message] = paths
        }
        let statements = messages.map { message in
            var update: BSONDocument = ["$pull": ["pending": ["batch": .string(batch)]]]
            let paths = (increments[message] ?? [:]).sorted { $0.key < $1.key }
            if !paths.isEmpty {
                update["$inc"] = .document(BSONDocument(paths.map { (key: $0.key, value: .int64($0.value)) }))
            }
            return UpdateStatement(
                filter: ["_id": .objectID(message), "pending.batch": .string(batch)], update: update)
        }
        guard !statements.isEmpty else { return }
        _ = try await mapErrors { try await counts.bulkUpdate(statements) }
    }

    /// Counts the batches whose counting was interrupted: those still pending on a message's counts since before
    /// `cutoff` (Unix ms; a live batch folds within a moment). Each is counted from the receipts that name it, read
    /// by `_id`, and folded as the store would have: once, however often this runs, on however many replicas.
    /// Returns how many batches it counted.
    /// - Throws: `DAOError`.
    @discardableResult
    public func recountInterrupted(before cutoff: Int64) async throws -> Int {
        let documents = try await mapErrors {
            try await counts.find(
                ["pending.at": ["$lt": .int64(cutoff)]],
                options: FindOptions(projection: ["pending": 1]))
        }
        var folded = 0
        for document in documents {
            guard let message = document.objectID("_id") else { continue }
            for entry in document["pending"]?.arrayValue?.compactMap(\.documentValue) ?? [] {
                guard let batch = entry["batch"]?.stringValue, (entry["at"]?.int64Value ?? 0) < cutoff else { continue }
                let ids = entry["receipts"]?.arrayValue ?? []
                var stored: [Receipt] = []
                for chunk in IDChunks.of(ids) {
                    let found = try await mapErrors {
                        try await receipts.find(["_id": ["$in": .array(Array(chunk))], "batch": .string(batch)])
                    }
                    stored += found.compactMap(Receipt.init(document:))
                }
                try await fold(batch, counting: stored, messages: [message])
                folded += 1
            }
        }
        return folded
    }

    /// The counts of `message`'s receipts (zeros when it has none): one document read.
    /// - Throws: `DAOError`.
    public func counts(of message: ObjectID) async throws -> ReceiptCounts {
        ReceiptCounts(document: try await mapErrors { try await counts.findOne(["_id": .objectID(message)]) })
    }

    /// Which of `devices` have acknowledged `message`: who has answered, for the report's list of those who have not
    /// and for re-sends.
    /// - Throws: `DAOError`.
    public func acknowledged(message: ObjectID, devices: [ObjectID]) async throws -> Set<ObjectID> {
        try await reported(.acknowledged, message: message, devices: devices)
    }

    /// Which of `devices` have reported `event` of `message`. Read by `_id`, `IDChunks.perCommand` devices a command
    /// (SecantusDB scans the whole collection for a range of `_id`s, and matches longer `$in` lists slower per id).
    /// - Throws: `DAOError`.
    public func reported(_ event: Receipt.Event, message: ObjectID, devices: [ObjectID]) async throws -> Set<ObjectID> {
        var found: Set<ObjectID> = []
        for chunk in IDChunks.of(devices) {
            let ids = chunk.map { BSONValue.string(Receipt.id(message: message, device: $0, event: event)) }
            let documents = try await mapErrors {
                try await receipts.find(["_id": ["$in": .array(ids)]], options: FindOptions(projection: ["_id": 1]))
            }
            for case let device? in documents.map({ $0["_id"]?.stringValue.flatMap(Self.device(ofReceiptID:)) }) {
                found.insert(device)
            }
        }
        return found
    }

    /// The device of a receipt's `_id` ("<message>/<device>/<event>").
    static func device(ofReceiptID id: String) -> ObjectID? {
        let parts = id.split(separator: "/")
        return parts.count == 3 ? ObjectID(hex: String(parts[1])) : nil
    }
}

import HubTime
import Mongo

/// The token sends of messages held back for devices in their quiet hours, in `quiet_deferrals`: one document per
/// (message, device), inserted when the relay sends a topic message without the quiet windows or leaves a quiet
/// device out of a message to persons and groups, and claimed under a lease and sent when each device's window ends.
public struct QuietDeferralDAO: Sendable {
    let collection: MongoCollection
    let now: UnixClock

    /// The due sends, oldest first, from the index alone.
    static let indexes = [IndexModel(keys: ["state": 1, "due_at": 1], name: "state.due_at")]

    public init(database: MongoDatabase, now: @escaping UnixClock = UnixTime.nowMilliseconds) {
        self.collection = database.collection(CollectionName.quietDeferrals)
        self.now = now
    }

    /// Stores `list` (unordered, 500 a command); a deferral stored already (the message was sent
    /// to its topic again) is kept as it is.
    /// - Throws: `DAOError`.
    public func schedule(_ list: [QuietDeferral]) async throws {
        for start in stride(from: 0, to: list.count, by: 500) {
            let documents = list[start..<min(start + 500, list.count)].map(\.document)
            do {
                _ = try await mapErrors { try await collection.insertMany(documents, ordered: false) }
            } catch let error as DAOError where error.code == .duplicate {
                // The others were inserted (unordered).
            }
        }
    }

    /// Up to `limit` pending deferrals due by `time` (Unix ms; default now), with their registrations: what is sent
    /// next.
    /// - Throws: `DAOError`.
    public func due(at time: Int64? = nil, limit: Int) async throws -> [QuietDeferral] {
        try await mapErrors {
            try await collection.find(
                ["state": "pending", "due_at": ["$lte": .int64(time ?? now())]],
                options: FindOptions(sort: ["due_at": 1], limit: Int64(limit)))
        }.compactMap(QuietDeferral.init(document:))
    }

    /// The deferrals as a leased queue: the lease at the top level, the due ones on the `state.due_at` index.
    var queue: LeasedQueue {
        LeasedQueue(collection: collection, prefix: "", dueField: "due_at") {
            ["state": "pending", "due_at": ["$lte": .int64($0)]]
        }
    }

    /// Claims up to `limit` pending deferrals due now for `owner` under a lease of `leaseMS`, the most overdue first,
    /// with their registrations: no other replica takes one while it is sent, and one whose process dies is due again
    /// when the lease runs out (`LeasedQueue`).
    /// - Throws: `DAOError`.
    public func claim(owner: String, leaseMS: Int64, limit: Int) async throws -> [QuietDeferral] {
        try await mapErrors {
            try await queue.claim(owner: owner, now: now(), leaseMS: leaseMS, limit: limit, order: ["_id": 1])
        }?.documents.compactMap(QuietDeferral.init(document:)) ?? []
    }

    /// Records FCM's answer to deferral `id` while it is pending: `.sent`, `.failed` or `.unregistered`, with FCM's
    /// error code for a refusal.
    /// - Throws: `DAOError`.
    public func record(_ id: String, _ state: QuietDeferral.State, code: String? = nil) async throws {
        var set: BSONDocument = ["state": .string(state.rawValue), "at": .int64(now())]
        if let code { set["code"] = .string(code) }
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(id), "state": "pending"],
                ["$set": .document(set), "$unset": .document(queue.endingLease())])
        }
    }

    /// Puts deferral `id` back to be sent at `dueAt` (Unix ms): FCM asked to wait.
    /// - Throws: `DAOError`.
    public func retry(_ id: String, at dueAt: Int64) async throws {
        _ = try await mapErrors {
            try await collection.updateOne(
                ["_id": .string(id), "state": "pending"],
                [
                    "$set": ["due_at": .int64(dueAt)], "$unset": .document(queue.endingLease()),
                    "$inc": ["attempts": .int64(1)],
                ])
        }
    }

    /// Every deferral of `message` (without registrations), by `_id`: what a report or a test reads.
    /// - Throws: `DAOError`.
    public func deferrals(of message: ObjectID) async throws -> [QuietDeferral] {
        try await mapErrors {
            try await collection.find(
                ["message": .objectID(message)],
                options: FindOptions(projection: ["registration": 0], sort: ["_id": 1]))
        }.compactMap(QuietDeferral.init(document:))
    }
}

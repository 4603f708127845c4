import Mongo

/// The webhooks in `webhooks`: created, listed, read and deleted by admins; read by the worker that delivers.
///
/// Every change tells the hub's `WebhookSubscribers` at once, so that events emitted here afterwards reach the
/// new webhook (other replicas see it within `WebhookSubscribers.maximumAge`).
public struct WebhookDAO: Sendable {
    let webhooks: MongoCollection
    let deliveries: MongoCollection
    let subscribers: WebhookSubscribers

    /// The webhooks of `database`; `subscribers`: the hub's memory of who subscribes to what, dropped at each change.
    public init(database: MongoDatabase, subscribers: WebhookSubscribers) {
        self.webhooks = database.collection(CollectionName.webhooks)
        self.deliveries = database.collection(CollectionName.webhookDeliveries)
        self.subscribers = subscribers
    }

    /// Stores `webhook`.
    /// - Throws: `DAOError`.
    public func insert(_ webhook: Webhook) async throws {
        _ = try await mapErrors { try await webhooks.insertOne(webhook.document) }
        subscribers.invalidate()
    }

    /// Every webhook, oldest first.
    /// - Throws: `DAOError`.
    public func all() async throws -> [Webhook] {
        try await mapErrors {
            try await webhooks.find([:], options: FindOptions(sort: ["_id": 1])).compactMap(Webhook.init(document:))
        }
    }

    /// The webhooks `ids` names that exist.
    /// - Throws: `DAOError`.
    public func find(_ ids: [ObjectID]) async throws -> [Webhook] {
        guard !ids.isEmpty else { return [] }
        return try await mapErrors {
            try await webhooks.find(["_id": ["$in": .array(ids.map(BSONValue.objectID))]])
                .compactMap(Webhook.init(document:))
        }
    }

    /// The webhook `id`, or nil.
    /// - Throws: `DAOError`.
    public func find(_ id: ObjectID) async throws -> Webhook? {
        try await mapErrors { try await webhooks.findOne(["_id": .objectID(id)]).flatMap(Webhook.init(document:)) }
    }

    /// Deletes the webhook `id` and its deliveries (those pending are never attempted); false when none had the id.
    /// - Throws: `DAOError`.
    public func delete(_ id: ObjectID) async throws -> Bool {
        let deleted = try await mapErrors { try await webhooks.deleteOne(["_id": .objectID(id)]) }
        subscribers.invalidate()
        _ = try await mapErrors { try await deliveries.deleteMany(["webhook": .objectID(id)]) }
        return deleted > 0
    }

    /// Each webhook's id and events, for `WebhookSubscribers`.
    func subscriptions() async throws -> [(id: ObjectID, events: Set<String>)] {
        try await mapErrors {
            try await webhooks.find([:], options: FindOptions(projection: ["events": 1])).compactMap { document in
                guard let id = document["_id"]?.objectIDValue else { return nil }
                return (id, Set(document["events"]?.arrayValue?.compactMap(\.stringValue) ?? []))
            }
        }
    }
}

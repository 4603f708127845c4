import HubModel
import Logging
import Mongo

/// Emits webhook events: the one call every layer that reaches the database makes (the relay for `message.sent`
/// and `message.failed`, receipts for `message.acknowledged`, escalation for `message.unacknowledged`).
///
/// The event is fanned out here, when it is emitted: one `webhook_deliveries` document per webhook subscribed to it,
/// each the outbox entry the webhook worker claims, retries and reports on its own (an endpoint that is down delays
/// only its own deliveries, and each has its own `webhook-id`). The body is written once, here, so every attempt
/// sends the same bytes. An event no webhook subscribes to writes nothing (`WebhookSubscribers` answers from memory).
public struct WebhookEventDAO: Sendable {
    let deliveries: MongoCollection
    let webhooks: WebhookDAO
    let subscribers: WebhookSubscribers
    let now: UnixClock

    /// Events of `database`, read against the hub's `subscribers`.
    public init(
        database: MongoDatabase, subscribers: WebhookSubscribers,
        now: @escaping UnixClock = UnixTime.nowMilliseconds
    ) {
        self.deliveries = database.collection(CollectionName.webhookDeliveries)
        self.webhooks = WebhookDAO(database: database, subscribers: subscribers)
        self.subscribers = subscribers
        self.now = now
    }

    /// Appends event `name` with `payload` (snake_case fields, its `data`) to the outbox of every webhook subscribed to
    /// it, in one insert; nothing when none is.
    /// - Throws: `DAOError`; nothing is then stored for any webhook.
    public func emit(_ event: WebhookEvent, payload: BSONDocument) async throws {
        let time = now()
        let targets = try await subscribers.subscribed(to: event, now: time, webhooks: webhooks)
        guard !targets.isEmpty else { return }
        // `timestamp` as a BSON date: the JSON writer gives it as RFC 3339 (`2026-03-01T08:00:00.000Z`).
        let body = LegacyJSONWriter().string([
            "type": .string(event.rawValue), "timestamp": .datetime(time), "data": .document(payload),
        ])
        let documents: [BSONDocument] = targets.map { webhook in
            [
                "_id": .objectID(ObjectID()), "webhook": .objectID(webhook), "event": .string(event.rawValue),
                "body": .string(body),
                "state": .string(WebhookDelivery.State.pending.rawValue), "attempts": .int64(0),
                "created_at": .int64(time), "due_at": .int64(time),
            ]
        }
        _ = try await mapErrors { try await deliveries.insertMany(documents, ordered: false) }
        subscribers.wake.notify()
    }

    /// How many times an event is tried before it is given up on.
    public static let attempts = 3

    /// Stores `emission` for every webhook subscribed to it: the one failure policy of webhook events. An event never
    /// fails what it reports (a message sent, an acknowledgement stored, an escalation ended, each recorded already):
    /// it is tried `attempts` times, half a second apart and doubling, each failure logged as a warning, then given
    /// up on with an error in the log.
    public func emit(_ emission: WebhookEmission, logger: Logger) async {
        var backoff = Backoff(first: .milliseconds(500), cap: .seconds(4))
        let metadata: Logger.Metadata = ["event": "\(emission.event.rawValue)", "msi_key": "\(emission.msiKey.hex)"]
        for attempt in 1...Self.attempts {
            do {
                try await emit(emission.event, payload: emission.payload)
                return
            } catch {
                logger.warning(
                    "a webhook event could not be stored",
                    metadata: metadata.merging(["error": "\(error)", "attempt": "\(attempt)"]) { $1 })
                if attempt < Self.attempts { try? await Task.sleep(for: backoff.next()) }
            }
        }
        logger.error("a webhook event was given up on; no webhook will receive it", metadata: metadata)
    }
}

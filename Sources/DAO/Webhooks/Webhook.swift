import Mongo

/// An endpoint of the school's (an SMS, voice or e-mail gateway) that the hub tells about events, in `webhooks`.
///
/// The signing secret is stored as given (`whsec_…`): the hub must compute each delivery's HMAC with it, so a hash
/// would not do. It is answered once, when the webhook is created, and never read back by the API.
public struct Webhook: Sendable, Hashable {
    /// The webhook's id.
    public let id: ObjectID
    /// Where deliveries are POSTed.
    public let url: String
    /// The event names it subscribes to (`message.sent`, ...).
    public let events: [String]
    /// The signing secret, `whsec_` and the base64 of its random bytes; never shown after creation.
    public let secret: String
    /// When it was created (Unix ms).
    public let createdAt: Int64

    /// A webhook of these fields.
    public init(id: ObjectID, url: String, events: [String], secret: String, createdAt: Int64) {
        self.id = id
        self.url = url
        self.events = events
        self.secret = secret
        self.createdAt = createdAt
    }

    /// The webhook a stored document holds, or nil when a field is missing or of the wrong type.
    init?(document: BSONDocument) {
        guard let id = document["_id"]?.objectIDValue, let url = document["url"]?.stringValue,
            let events = document["events"]?.arrayValue?.compactMap(\.stringValue),
            let secret = document["secret"]?.stringValue, let createdAt = document["created_at"]?.int64Value
        else { return nil }
        self.init(id: id, url: url, events: events, secret: secret, createdAt: createdAt)
    }

    /// The document stored for this webhook.
    var document: BSONDocument {
        [
            "_id": .objectID(id), "url": .string(url), "events": .array(events.map(BSONValue.string)),
            "secret": .string(secret), "created_at": .int64(createdAt),
        ]
    }
}

/// One event on its way to one webhook, in `webhook_deliveries`: the outbox the webhook worker claims from.
public struct WebhookDelivery: Sendable, Hashable {
    /// Where a delivery stands.
    public enum State: String, Sendable, CaseIterable {
        /// Not delivered yet: due at `dueAt` for its next attempt.
        case pending
        /// The endpoint answered 2xx.
        case delivered
        /// Given up on: the retry window ran out, or the webhook is gone.
        case failed
    }

    /// The delivery's id; `msg_<hex>` is its `webhook-id`, the same on every attempt.
    public let id: ObjectID
    /// The webhook it goes to.
    public let webhook: ObjectID
    /// The event's name.
    public let event: String
    /// The JSON body, fixed when the event was emitted so that every attempt sends the same bytes.
    public let body: String
    public let state: State
    /// Attempts begun so far (a claim counts one).
    public let attempts: Int64
    /// When the event was emitted (Unix ms); the retry window counts from here.
    public let createdAt: Int64
    /// When the next attempt is due (Unix ms), while pending.
    public let dueAt: Int64?
    /// The HTTP status of the last answer, if one came.
    public let lastStatus: Int?
    /// Why the last attempt failed without a status (`timeout`, `connect_failed`, `address_refused`, ...).
    public let lastError: String?
    /// When the endpoint took it (Unix ms).
    public let deliveredAt: Int64?
    /// When it was given up on (Unix ms).
    public let failedAt: Int64?

    /// The `webhook-id` header: the same on every attempt of this delivery.
    public var messageID: String { "msg_\(id.hex)" }

    /// The delivery a stored document holds, or nil when a field is missing or of the wrong type.
    init?(document: BSONDocument) {
        guard let id = document["_id"]?.objectIDValue, let webhook = document["webhook"]?.objectIDValue,
            let event = document["event"]?.stringValue, let body = document["body"]?.stringValue,
            let state = document["state"]?.stringValue.flatMap(State.init(rawValue:)),
            let createdAt = document["created_at"]?.int64Value
        else { return nil }
        self.id = id
        self.webhook = webhook
        self.event = event
        self.body = body
        self.state = state
        self.attempts = document["attempts"]?.int64Value ?? 0
        self.createdAt = createdAt
        self.dueAt = state == .pending ? document["due_at"]?.int64Value : nil
        self.lastStatus = document["last_status"]?.int64Value.map { Int($0) }
        self.lastError = document["last_error"]?.stringValue
        self.deliveredAt = document["delivered_at"]?.int64Value
        self.failedAt = document["failed_at"]?.int64Value
    }
}

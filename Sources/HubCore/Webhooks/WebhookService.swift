import DAO
import Foundation
import HubModel
import HubTime
import Mongo

/// Webhooks for the school's gateways (SMS, voice, e-mail): the one home of their rules (which URLs and events, the
/// signing secret shown once), which the API calls. Every input is checked before any query.
public struct WebhookService: Sendable {
    let webhooks: WebhookDAO
    let deliveries: WebhookDeliveryDAO
    /// Where deliveries may go (`WEBHOOK_ALLOWED_NETWORKS`).
    public let policy: WebhookAddressPolicy
    let now: UnixClock
    /// Where every webhook created or deleted is recorded (never its secret).
    let audit: AuditLog

    /// The most events one webhook lists (there are only so many names).
    public static let maximumEvents = 16
    /// How many random bytes a signing secret has (the Standard Webhooks scheme asks for 24 to 64).
    public static let secretBytes = 32
    /// The most deliveries one page lists, and how many unless asked otherwise.
    public static let maximumPage = 200
    public static let defaultPage = 50

    /// The webhooks of `database`; `audit` is the hub's log (`HubServices.audit`; nil: one keyed as the database keeps).
    public init(
        database: MongoDatabase, subscribers: WebhookSubscribers,
        policy: WebhookAddressPolicy = WebhookAddressPolicy(), now: @escaping UnixClock = UnixTime.nowMilliseconds,
        audit: AuditLog? = nil
    ) {
        self.webhooks = WebhookDAO(database: database, subscribers: subscribers)
        self.deliveries = WebhookDeliveryDAO(database: database)
        self.policy = policy
        self.now = now
        self.audit = audit ?? AuditLog(database: database, now: now)
    }

    /// Creates a webhook POSTing `events` to `url`, with a new signing secret: the only time the secret is answered.
    /// - Throws: `WebhookRefusal` `.invalidWebhook` (a URL `WebhookAddressPolicy.check` refuses, no event, an unknown
    ///   event, too many); `DAOError`.
    public func create(url: String, events: [String]) async throws -> Webhook {
        _ = try policy.check(url)
        guard !events.isEmpty else { throw WebhookRefusal(.invalidWebhook, "events must name at least one event") }
        guard events.count <= Self.maximumEvents else {
            throw WebhookRefusal(.invalidWebhook, "events names at most \(Self.maximumEvents) events")
        }
        if let unknown = events.first(where: { WebhookEvent(rawValue: $0) == nil }) {
            let known = WebhookEvent.allCases.sorted().map(\.rawValue).joined(separator: ", ")
            throw WebhookRefusal(.invalidWebhook, "\"\(unknown.prefix(64))\" is not an event; the events are \(known)")
        }
        var unique: [String] = []
        for event in events where !unique.contains(event) { unique.append(event) }
        let webhook = Webhook(id: ObjectID(), url: url, events: unique, secret: Self.makeSecret(), createdAt: now())
        try await webhooks.insert(webhook)
        await audit.record(
            action: "webhook.create", target: AuditTarget(kind: "webhook", id: webhook.id.hex),
            change: AuditChange.created(["url": .string(url), "events": .array(unique.map(BSONValue.string))]))
        return webhook
    }

    /// A new signing secret: `whsec_` and the standard base64 of `secretBytes` random bytes.
    static func makeSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<secretBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "whsec_" + Data(bytes).base64EncodedString()
    }

    /// Every webhook, oldest first.
    /// - Throws: `DAOError`.
    public func all() async throws -> [Webhook] {
        try await webhooks.all()
    }

    /// The webhook `id`.
    /// - Throws: `WebhookRefusal` `.webhookNotFound`; `DAOError`.
    public func webhook(id: ObjectID) async throws -> Webhook {
        guard let webhook = try await webhooks.find(id) else { throw Self.notFound }
        return webhook
    }

    /// Deletes the webhook `id`; its deliveries not yet made are dropped.
    /// - Throws: `WebhookRefusal` `.webhookNotFound`; `DAOError`.
    public func delete(id: ObjectID) async throws {
        let before = try await webhooks.find(id)
        guard try await webhooks.delete(id) else { throw Self.notFound }
        await audit.record(
            action: "webhook.delete", target: AuditTarget(kind: "webhook", id: id.hex),
            change: before.map {
                AuditChange.deleted([
                    "url": .string($0.url),
                    "events": .array($0.events.map(BSONValue.string)),
                ])
            })
    }

    /// A page of webhook `id`'s deliveries, newest first, older than `before` when given; `next` is the cursor of
    /// the page after (nil on the last).
    /// - Throws: `WebhookRefusal` `.webhookNotFound`; `DAOError`.
    public func deliveries(of id: ObjectID, before: ObjectID?, limit: Int = defaultPage) async throws
        -> (deliveries: [WebhookDelivery], next: ObjectID?)
    {
        _ = try await webhook(id: id)
        let limit = min(max(limit, 1), Self.maximumPage)
        let page = try await deliveries.list(webhook: id, before: before, limit: limit + 1)
        let shown = Array(page.prefix(limit))
        return (shown, page.count > limit ? shown.last?.id : nil)
    }

    private static let notFound = WebhookRefusal(.webhookNotFound, "no webhook has this id")
}

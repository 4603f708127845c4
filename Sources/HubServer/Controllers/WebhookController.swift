import DAO
import HubCore
import Hummingbird
import Mongo

/// Webhooks for the school's gateways, managed by admins: created with their signing secret (answered once), listed,
/// read, deleted, and each one's recent deliveries and failures listed. `WebhookService` holds every rule.
struct WebhookController {
    let services: HubServices

    /// Every route on `admins`, the group of admin-only routes.
    func addRoutes(to admins: RouterGroup<HubRequestContext>) {
        admins.post("/webhook", use: create)
        admins.get("/webhook", use: list)
        admins.get("/webhook/:webhookID", use: get)
        admins.delete("/webhook/:webhookID", use: delete)
        admins.get("/webhook/:webhookID/deliveries", use: deliveries)
    }

    /// POST /webhook `{"url", "events"}`: 201 with the webhook and its `secret`, the only answer that holds it.
    @Sendable func create(request: Request, context: HubRequestContext) async throws -> Response {
        var request = request
        let fields = FieldReader(document: try await request.jsonObject(context: context))
        guard let url = fields.document["url"]?.stringValue else {
            throw HubError.invalid(.invalidWebhook, "the field \"url\" must be a string")
        }
        guard let array = fields.document["events"]?.arrayValue else {
            throw HubError.invalid(.invalidWebhook, "the field \"events\" must be an array of event names")
        }
        let events = try array.map { value in
            guard let name = value.stringValue else {
                throw HubError.invalid(.invalidWebhook, "the field \"events\" must be an array of event names")
            }
            return name
        }
        let webhook = try await services.webhooks.create(url: url, events: events)
        var document = Self.document(webhook)
        document["secret"] = .string(webhook.secret)
        return JSONResponse.make(.document(document), status: .created)
    }

    /// GET /webhook: every webhook, oldest first, without secrets.
    @Sendable func list(request: Request, context: HubRequestContext) async throws -> Response {
        let webhooks = try await services.webhooks.all()
        return JSONResponse.make(["webhooks": .array(webhooks.map { .document(Self.document($0)) })])
    }

    /// GET /webhook/:webhookID: the webhook, without its secret.
    @Sendable func get(request: Request, context: HubRequestContext) async throws -> Response {
        let webhook = try await services.webhooks.webhook(id: try context.parameters.objectID("webhookID"))
        return JSONResponse.make(.document(Self.document(webhook)))
    }

    /// DELETE /webhook/:webhookID: 204; deliveries not yet made are dropped.
    @Sendable func delete(request: Request, context: HubRequestContext) async throws -> Response {
        try await services.webhooks.delete(id: try context.parameters.objectID("webhookID"))
        return Response(status: .noContent)
    }

    /// GET /webhook/:webhookID/deliveries?cursor=&limit=: the newest deliveries first, and the next page's cursor.
    @Sendable func deliveries(request: Request, context: HubRequestContext) async throws -> Response {
        let id = try context.parameters.objectID("webhookID")
        let query = request.uri.queryParameters
        let limit = try PageQuery.limit(query, default: WebhookService.defaultPage, maximum: WebhookService.maximumPage)
        let before = try PageQuery.cursor(query) { ObjectID(hex: $0) }
        let page = try await services.webhooks.deliveries(of: id, before: before, limit: limit)
        return JSONResponse.make([
            "deliveries": .array(page.deliveries.map { .document(Self.document($0)) }),
            "next": page.next.map { .string($0.hex) } ?? .null,
        ])
    }

    /// The webhook as the API shows it: never its secret.
    static func document(_ webhook: Webhook) -> BSONDocument {
        [
            "id": .string(webhook.id.hex), "url": .string(webhook.url),
            "events": .array(webhook.events.map(BSONValue.string)), "created_at": .int64(webhook.createdAt),
        ]
    }

    /// A delivery as the list shows it: what was tried and how it ended, never the receiver's answer body.
    static func document(_ delivery: WebhookDelivery) -> BSONDocument {
        var elements: [(key: String, value: BSONValue)] = [
            ("id", .string(delivery.messageID)), ("event", .string(delivery.event)),
            ("state", .string(delivery.state.rawValue)), ("attempts", .int64(delivery.attempts)),
            ("created_at", .int64(delivery.createdAt)),
        ]
        elements.append(("last_status", delivery.lastStatus.map { .int64(Int64($0)) } ?? .null))
        elements.append(("last_error", delivery.lastError.map(BSONValue.string) ?? .null))
        elements.append(("next_attempt_at", delivery.dueAt.map(BSONValue.int64) ?? .null))
        elements.append(("delivered_at", delivery.deliveredAt.map(BSONValue.int64) ?? .null))
        elements.append(("failed_at", delivery.failedAt.map(BSONValue.int64) ?? .null))
        return BSONDocument(elements)
    }
}

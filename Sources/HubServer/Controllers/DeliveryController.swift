import DAO
import HubCore
import Hummingbird
import Mongo

/// The per-device deliveries of a message to persons and groups: `GET /message/:msiKey/deliveries`, for its sender
/// and admins (`DeliveryReportService` holds the rule; anyone else gets 404, as for the message).
struct DeliveryController {
    let services: HubServices

    /// The route on `senders`, the group of communicators' and admins' routes.
    func addRoutes(to senders: RouterGroup<HubRequestContext>) {
        senders.get("/message/:msiKey/deliveries", use: report)
    }

    /// GET /message/:msiKey/deliveries?cursor=&limit=: `{"counts", "platforms", "deliveries", "next"}`.
    @Sendable func report(request: Request, context: HubRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let limit = try PageQuery.limit(
            query, default: DeliveryReportService.defaultLimit,
            maximum: DeliveryReportService.maximumLimit)
        let cursor = try PageQuery.cursor(query) { ObjectID(hex: $0) }
        let report = try await services.deliveries.report(
            msiKey: try context.parameters.objectID("msiKey"),
            for: context.messageViewer, cursor: cursor, limit: limit)
        return JSONResponse.make([
            "counts": .document(Self.document(report.counts.byState)),
            "platforms": .document(
                BSONDocument(
                    report.counts.byPlatform.sorted { $0.key.rawValue < $1.key.rawValue }
                        .map { (key: $0.key.rawValue, value: .document(Self.document($0.value))) })),
            "deliveries": .array(report.deliveries.map { .document(Self.document($0)) }),
            "next": report.next.map(BSONValue.string) ?? .null,
        ])
    }

    /// Counts by state, every state named.
    static func document(_ counts: [Delivery.State: Int64]) -> BSONDocument {
        BSONDocument(Delivery.State.allCases.map { (key: $0.rawValue, value: .int64(counts[$0] ?? 0)) })
    }

    /// One delivery as the report lists it: never its registration.
    static func document(_ delivery: Delivery) -> BSONDocument {
        var elements: [(key: String, value: BSONValue)] = [
            ("device", .string(delivery.device.hex)), ("person", .string(delivery.person)),
            ("via", .string(delivery.via.rawValue)),
        ]
        if let group = delivery.group { elements.append(("group", .string(group))) }
        elements += [("platform", .string(delivery.platform.rawValue)), ("state", .string(delivery.state.rawValue))]
        if let code = delivery.code { elements.append(("code", .string(code))) }
        if let at = delivery.at { elements.append(("at", .int64(at))) }
        return BSONDocument(elements)
    }
}

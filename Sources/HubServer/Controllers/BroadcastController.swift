import DAO
import HubCore
import Hummingbird
import HummingbirdCore
import Mongo

/// The banners an app shows at launch (`BroadcastService`): the live downtime, greeting and non-dismissible
/// messages, for an app without registration by its topics, and for a registered device by its own subscriptions,
/// person and groups (its secret, as its catch-up). Both answer `{"broadcasts": [message...]}`, newest first.
struct BroadcastController {
    let services: HubServices

    func addRoutes(to router: Router<HubRequestContext>) {
        router.get("/broadcasts/active", use: active)
        router.get("/device/:deviceID/broadcasts", use: device)
    }

    /// GET /broadcasts/active?topic_key=T[,T2...]&limit=: anyone; the topics' live banners, their public fields.
    @Sendable func active(request: Request, context: HubRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let topicKeys = query.getAll("topic_key").flatMap { $0.split(separator: ",").map(String.init) }
        guard !topicKeys.isEmpty, topicKeys.count <= BroadcastService.maximumTopics,
            topicKeys.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 200 })
        else {
            throw HubError.badRequest(
                .invalidQuery, "topic_key must name 1 to \(BroadcastService.maximumTopics) topics")
        }
        let banners = try await services.broadcasts.active(topicKeys: topicKeys, limit: try Self.limit(query))
        return Self.response(banners)
    }

    /// GET /device/:deviceID/broadcasts?limit=: the device's secret; the live banners of its subscriptions, its
    /// person and its person's groups, as its catch-up shows them.
    @Sendable func device(request: Request, context: HubRequestContext) async throws -> Response {
        let device = try await services.devices.authenticate(
            try context.parameters.objectID("deviceID"),
            secret: context.deviceSecret)
        let banners = try await services.broadcasts.active(
            for: device, limit: try Self.limit(request.uri.queryParameters))
        return Self.response(banners)
    }

    /// The query's `limit`: 1 to `BroadcastService.maximumLimit`, `defaultLimit` when absent.
    /// - Throws: `HubError` 400 `invalid_query`.
    static func limit(_ query: FlatDictionary<Substring, Substring>) throws -> Int {
        try PageQuery.limit(query, default: BroadcastService.defaultLimit, maximum: BroadcastService.maximumLimit)
    }

    /// `{"broadcasts": [...]}`.
    static func response(_ banners: [Message]) -> Response {
        JSONResponse.make(["broadcasts": .array(banners.map { .document($0.document) })])
    }
}

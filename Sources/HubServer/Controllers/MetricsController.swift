import DAO
import Hummingbird
import Mongo

/// GET /metrics: the hub's metrics in Prometheus's text format.
///
/// Request counts and latencies come from Hummingbird's `MetricsMiddleware`, relay counts from the
/// outbox worker; the pool, the outbox backlog and the cube are read at each scrape.
struct MetricsController {
    let services: HubServices

    func addRoutes(to router: Router<HubRequestContext>) {
        router.get("/metrics", use: metrics)
    }

    @Sendable func metrics(request: Request, context: HubRequestContext) async throws -> Response {
        let metrics = HubMetrics.shared
        let usage = services.pool.usage
        metrics.set("msi_mongo_pool_size", Double(services.pool.configuration.maxPoolSize))
        metrics.set("msi_mongo_pool_in_use", Double(usage.inUse))
        metrics.set("msi_mongo_pool_waiting", Double(usage.waiting))
        let now = UnixTime.nowMilliseconds()
        // The backlog is the database's; a scrape while it is unreachable still answers, without it.
        if let backlog = try? await services.outbox.backlog(now: now) {
            metrics.set("msi_outbox_depth", Double(backlog.count))
            metrics.set("msi_outbox_oldest_pending_age_seconds",
                        backlog.oldestDueAt.map { Double(max(now - $0, 0)) / 1000 } ?? 0)
        }
        let cube = services.cube.statistics
        metrics.set("msi_cube_version", Double(cube.version))
        metrics.set("msi_cube_loads", Double(cube.loads))
        metrics.set("msi_cube_bytes", Double(cube.bytes))
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emit())))
    }
}

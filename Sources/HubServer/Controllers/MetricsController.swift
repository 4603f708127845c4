import DAO
import HubCore
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
        metrics.set("msi_mongo_pool_size", Double(services.pool.configuration.maxPoolSize), help: "Database connections the pool may open")
        metrics.set("msi_mongo_pool_in_use", Double(usage.inUse), help: "Database connections in use")
        metrics.set("msi_mongo_pool_waiting", Double(usage.waiting), help: "Operations waiting for a database connection")
        let now = UnixTime.nowMilliseconds()
        // The backlog is the database's; a scrape while it is unreachable still answers, without it.
        if let backlog = try? await services.outbox.backlog(now: now) {
            metrics.set("msi_outbox_depth", Double(backlog.count), help: "Messages due and not yet relayed")
            metrics.set("msi_outbox_oldest_pending_age_seconds",
                        backlog.oldestDueAt.map { Double(max(now - $0, 0)) / 1000 } ?? 0,
                        help: "How long the oldest due message has waited")
        }
        if let devices = try? await services.devices.statistics(now: now) {
            for (platform, count) in devices.byPlatform {
                metrics.set("msi_devices", labels: [("platform", platform.rawValue)], Double(count),
                            help: "Registered devices FCM still knows, by platform")
            }
            metrics.set("msi_subscriptions_pending", Double(devices.pending),
                        help: "Device subscriptions the reconciler has yet to apply at FCM")
            metrics.set("msi_subscriptions_oldest_pending_age_seconds", devices.oldestPendingAgeSeconds,
                        help: "How long the oldest pending subscription has waited")
            metrics.set("msi_subscription_rollouts", Double(devices.rollouts),
                        help: "Subjects on their way to every registered device")
        }
        let cube = services.cube.cache.statistics
        metrics.set("msi_cube_version", Double(cube.version), help: "Distinct cube contents this process has served")
        metrics.set("msi_cube_loads", Double(cube.loads), help: "Cube loads from the database by this process")
        metrics.set("msi_cube_bytes", Double(cube.bytes), help: "Size of GET /channel in bytes")
        // How far behind the database the in-memory copies may be (over a second: read again before use).
        for (name, freshness) in [("cube", services.cube.cache.freshness), ("tokens", services.accounts.tokenDirectory.freshness)] {
            if let age = freshness.ageSeconds {
                metrics.set("msi_\(name)_confirmed_age_seconds", age,
                            help: "Seconds since the database last confirmed this process's copy of the \(name)")
            }
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emit())))
    }
}

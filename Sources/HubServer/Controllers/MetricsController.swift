import DAO
import HubCore
import Hummingbird
import Mongo

/// GET /metrics: the hub's metrics in Prometheus's text format.
///
/// Request counts and latencies come from Hummingbird's `MetricsMiddleware`, relay counts from the outbox worker;
/// the pool and the cube are read from memory at each scrape; the database's figures (backlogs, devices,
/// rollouts) come from `DatabaseGauges`, which reads them at most every 15 s however many scrapers ask.
struct MetricsController {
    let services: HubServices
    /// The database's figures, shared by every scrape of this process.
    let gauges: DatabaseGauges
    /// The Bearer token a scrape must carry (`METRICS_TOKEN`); nil: anyone may scrape.
    let token: String?

    init(services: HubServices, token: String?) {
        self.services = services
        self.gauges = DatabaseGauges(services: services)
        self.token = token
    }

    func addRoutes(to router: Router<HubRequestContext>) {
        router.get("/metrics", use: metrics)
    }

    @Sendable func metrics(request: Request, context: HubRequestContext) async throws -> Response {
        try checkToken(request)
        let metrics = HubMetrics.shared
        let usage = services.pool.usage
        metrics.set(
            "msi_mongo_pool_size", Double(services.pool.configuration.maxPoolSize),
            help: "Database connections the pool may open")
        metrics.set("msi_mongo_pool_in_use", Double(usage.inUse), help: "Database connections in use")
        metrics.set(
            "msi_mongo_pool_waiting", Double(usage.waiting), help: "Operations waiting for a database connection")
        // A scrape while the database is unreachable still answers: with the last reading, or without one.
        if let reading = await gauges.current() {
            let now = services.now()
            // Seconds from a due time (Unix ms) to now; 0 for none.
            func age(_ dueAt: Int64?) -> Double { dueAt.map { Double(max(now - $0, 0)) / 1000 } ?? 0 }
            metrics.set(
                "msi_database_gauges_age_seconds", Double(max(now - reading.readAt, 0)) / 1000,
                help: "How old the figures read from the database are (read at most every 15 s)")
            metrics.set("msi_outbox_depth", Double(reading.outboxDepth), help: "Messages due and not yet relayed")
            metrics.set(
                "msi_outbox_oldest_pending_age_seconds", age(reading.outboxOldestDueAt),
                help: "How long the oldest due message has waited")
            for (platform, count) in reading.devicesByPlatform {
                metrics.set(
                    "msi_devices", labels: [("platform", platform.rawValue)], Double(count),
                    help: "Registered devices FCM still knows, by platform")
            }
            metrics.set(
                "msi_subscriptions_pending", Double(reading.subscriptionsPending),
                help: "Device subscriptions the reconciler has yet to apply at FCM")
            metrics.set(
                "msi_subscriptions_oldest_pending_age_seconds", age(reading.subscriptionsOldestDueAt),
                help: "How long the oldest pending subscription has waited")
            metrics.set(
                "msi_subscription_rollouts", Double(reading.rollouts),
                help: "Subjects on their way to every registered device")
        }
        let cube = services.cube.cache.statistics
        metrics.set("msi_cube_version", Double(cube.version), help: "Distinct cube contents this process has served")
        metrics.set("msi_cube_loads", Double(cube.loads), help: "Cube loads from the database by this process")
        metrics.set("msi_cube_bytes", Double(cube.bytes), help: "Size of GET /channel in bytes")
        // How far behind the database the in-memory copies may be (over a second: read again before use).
        for (name, freshness) in [
            ("cube", services.cube.cache.freshness), ("tokens", services.accounts.tokenDirectory.freshness),
        ] {
            if let age = freshness.ageSeconds {
                metrics.set(
                    "msi_\(name)_confirmed_age_seconds", age,
                    help: "Seconds since the database last confirmed this process's copy of the \(name)")
            }
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emit())))
    }

    /// Lets the scrape through when no token is configured or the request carries it as a Bearer token (compared
    /// in constant time).
    /// - Throws: `HubError` 401 `unauthenticated`.
    private func checkToken(_ request: Request) throws {
        guard let token else { return }
        let parts = request.headers[.authorization]?.split(separator: " ", maxSplits: 1) ?? []
        // Both sides hashed first: equal lengths, so the comparison's time tells nothing of the token's length.
        guard parts.count == 2, parts[0].lowercased() == "bearer",
            Secret.constantTimeEquals(Secret.hash(String(parts[1]).trimmingSpaces), Secret.hash(token))
        else {
            throw HubError(
                .unauthorized, .unauthenticated, "/metrics needs the metrics token (Authorization: Bearer ...)",
                headers: [.wwwAuthenticate: "Bearer realm=\"msi-hub metrics\""])
        }
    }
}

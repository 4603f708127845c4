import DAO
import Foundation
import HubCore
import Hummingbird
import Logging
import Mongo
import OIDC
import ServiceLifecycle

/// Builds the hub (the composition root): metrics, the database pool, indexes, services, in-memory copies and
/// routes, ready to run.
///
/// Start-up work (indexes, the first admin, the first loads) is done before the server accepts a request.
/// The pool closes after the server has finished its in-flight requests on shutdown.
public func buildApplication(
    configuration: HubConfiguration,
    logger: Logger? = nil,
    databaseName: String? = nil
) async throws -> some ApplicationProtocol {
    let logger = logger ?? Logger(label: "msi-hub")
    // Metrics made by the services below need the backend in place first.
    HubMetrics.bootstrap()
    let pool = try MongoClientPool(configuration: configuration.mongoConfiguration)
    let answers = CubeAnswers()
    let services = HubServices(
        pool: pool, database: databaseName.map { pool.database($0) },
        relayDeadline: configuration.relay.deadline,
        relayMaxBacklog: configuration.relay.maxBacklog,
        writeDeadline: configuration.writeDeadline,
        logger: logger, cubeDidLoad: answers.prepare,
        personAssertions: PersonAssertionVerifier(
            settings: configuration.persons.assertions,
            loadKeySet: PersonKeySet.loader, logger: logger),
        webhookPolicy: configuration.webhooks.policy,
        defaultLanguage: configuration.defaultLanguage, approval: configuration.approval,
        roomPostsPerMinute: configuration.devices.roomPostsPerMinute,
        countsUnread: configuration.devices.countsUnread,
        digests: DigestPolicy(
            defaultHour: configuration.devices.digestHour, schoolZone: configuration.portal.schoolTimeZone),
        staffProvider: configuration.portal.staffSignIn.map {
            (OIDCProvider(settings: $0.settings, transport: CurlOIDCTransport(), logger: logger), $0.rules)
        },
        passwordLogins: configuration.portal.staffSignIn?.only != true,
        pseudonymKey: configuration.privacy.pseudonymKey, erasureBlockDays: configuration.privacy.erasureBlockDays,
        retention: configuration.privacy.retention)
    try await StartupTasks.ensureIndexes(services: services, logger: logger)
    try await StartupTasks.bootstrapAdmin(services: services, logger: logger)
    try await services.loadCopies()
    let router = buildRouter(
        services: services, portal: configuration.portal, devices: configuration.devices,
        answers: answers, metricsToken: configuration.metricsToken,
        trustedProxies: configuration.trustedProxies)
    // The in-memory copies follow the database, so other replicas' writes reach them within a second.
    let follower = services.follower(logger: logger)
    // Services stop in reverse order: the relay finishes its batches before the pool closes.
    var background: [any Service] = [
        PoolService(pool: pool), TaskService(name: "database-follower") { await follower.run() },
    ]
    // Receipts whose counting a dying process interrupted are counted at start and every minute after.
    background.append(TaskService(name: "receipt-recount") { await services.receipts.recountInterruptedLoop() })
    // Expired sessions, idempotency keys, used assertions and the like, removed every minute by a range of an index.
    let expiry = ExpirySweeper(sweep: ExpirySweepDAO(database: services.database, now: services.now), logger: logger)
    background.append(TaskService(name: "expiry-sweep") { await expiry.loop() })
    // Approval requests that expired are recorded as such (and in the audit log) every minute.
    background.append(TaskService(name: "approval-expiry") { await services.approvals.expireLoop() })
    let reminders = EventController(services: services).compose
    background.append(TaskService(name: "event-reminders") { await services.events.reminderLoop(compose: reminders) })
    // Erasures of persons' data run on any replica, each once, resumed after a crash.
    background.append(TaskService(name: "person-erasures") { await services.personData.erasureLoop() })
    // Deliveries, receipts, messages and room posts past their retention limit, deleted in batches (none when unset).
    background.append(TaskService(name: "retention-purge") { await services.retention.loop() })
    // The audit log's head, logged at start and every hour: a tail cut off the log is caught against these lines.
    background.append(TaskService(name: "audit-head") { await services.audit.logHeadLoop() })
    // One FCM client for the relay and the reconciler, its threads stopped after both.
    if let fcm = try FCMService(configuration: configuration.relay, logger: logger) {
        let relay = RelayService(
            configuration: configuration.relay, fcm: fcm.client, services: services, logger: logger)
        background += [
            fcm,
            relay,
            ReconcilerService(configuration: configuration, fcm: fcm.client, services: services, logger: logger),
            WebhookDeliveryService(configuration: configuration.webhooks, services: services, logger: logger),
        ]
        // After the relay: it stops first, and the relay's gate and pacer it sends through outlive it.
        if let escalation = EscalationService(relay: relay, services: services, logger: logger) {
            background.append(escalation)
        }
    }
    let serverName = "msi-hub"
    let cubeHandler = CubeChannelHandler.Shared(
        cube: services.cube.cache, answers: answers, serverName: serverName,
        logger: logger)
    return Application(
        router: router,
        server: .hubHTTP1(
            cube: cubeHandler,
            limit: ConnectionLimitHandler.Shared(
                maximum: configuration.connections.maxConnections,
                logger: logger),
            deadlines: RequestDeadlineHandler.Shared(configuration.connections, logger: logger)),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
        services: background,
        logger: logger
    )
}

/// Builds the hub and runs it until SIGTERM or SIGINT (`msi-hub serve`).
public func runApplication(configuration: HubConfiguration) async throws {
    try await buildApplication(configuration: configuration).runService()
}

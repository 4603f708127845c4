import DAO
import Foundation
import Hummingbird
import Logging
import Mongo
import ServiceLifecycle

/// Builds the hub: the database pool, indexes, services and routes, ready to run.
///
/// Start-up work (indexes) is done before the server accepts a request. The pool closes after
/// the server has finished its in-flight requests on shutdown.
public func buildApplication(
    configuration: HubConfiguration,
    logger: Logger? = nil,
    databaseName: String? = nil
) async throws -> some ApplicationProtocol {
    let logger = logger ?? Logger(label: "msi-hub")
    let pool = try MongoClientPool(configuration: configuration.mongoConfiguration)
    let services = HubServices(pool: pool, database: databaseName.map { pool.database($0) },
                               relayDeadlineMS: configuration.relay.deadline.components.seconds * 1000)
    try await StartupTasks.ensureIndexes(services: services, logger: logger)
    if let admin = try await StartupTasks.bootstrapAdmin(services: services) {
        logger.notice("created the first user", metadata: ["username": "\(admin.username)"])
        FileHandle.standardOutput.write(Data("""

            msi-hub: no user existed, so one was created. Log in with
                username: \(admin.username)
                password: \(admin.password)
            This password is shown only once; change it with `msi-hub user passwd \(admin.username)`.

            """.utf8))
    }
    try await services.cube.refresh()
    try await services.tokenDirectory.refresh()
    let router = buildRouter(services: services, portal: configuration.portal)
    // The in-memory copies follow the database, so other replicas' writes reach them within a second.
    let follower = DatabaseFollower(database: services.database, copies: [
        FollowedCopy(collection: CollectionName.icube, reload: services.cube.refresh, freshness: services.cube.freshness),
        FollowedCopy(collection: CollectionName.tokens, reload: services.tokenDirectory.refresh,
                     freshness: services.tokenDirectory.freshness),
    ], logger: logger)
    // Services stop in reverse order: the relay finishes its batches before the pool closes.
    var background: [any Service] = [PoolService(pool: pool), TaskService(name: "database-follower") { await follower.run() }]
    if let relay = try RelayService(configuration: configuration.relay, services: services, logger: logger) {
        background.append(relay)
    }
    let serverName = "msi-hub"
    let cubeHandler = CubeChannelHandler.Shared(cube: services.cube, serverName: serverName, logger: logger)
    return Application(
        router: router,
        server: .hubHTTP1(cube: cubeHandler),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
        services: background,
        logger: logger
    )
}

/// The routes and middleware of the hub over `services`, the web portal's included.
public func buildRouter(services: HubServices, portal: PortalConfiguration = PortalConfiguration()) -> Router<HubRequestContext> {
    let router = Router(context: HubRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: AuthMiddleware(credentials: services.credentials))
    CubeController(services: services).addRoutes(to: router)
    MessageController(services: services).addRoutes(to: router)
    HealthController(services: services).addRoutes(to: router)
    MetricsController(services: services).addRoutes(to: router)
    Portal(services: services, configuration: portal).addRoutes(to: router)
    return router
}

/// Closes the database pool once the server has stopped (services stop in reverse order).
struct PoolService: Service {
    let pool: MongoClientPool

    func run() async throws {
        try? await gracefulShutdown()
        await pool.close()
    }
}

/// A background task that runs for the application's life and is cancelled at graceful shutdown.
struct TaskService: Service {
    let name: String
    let body: @Sendable () async -> Void

    init(name: String, _ body: @escaping @Sendable () async -> Void) {
        self.name = name
        self.body = body
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await body() }
    }
}

/// Work done once before the hub takes requests.
enum StartupTasks {
    /// Creates the indexes, waiting up to a minute for a database that is still starting.
    static func ensureIndexes(services: HubServices, logger: Logger) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        while true {
            do {
                try await DatabaseIndexes.ensure(in: services.database)
                return
            } catch let error as DAOError where error.code == .unavailable && clock.now < deadline {
                logger.warning("the database is not reachable yet; retrying", metadata: ["uri_database": "\(services.database.name)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Creates `admin` with a random password when no user exists; returns it to print once.
    static func bootstrapAdmin(services: HubServices) async throws -> (username: String, password: String)? {
        guard try await services.users.list().isEmpty else { return nil }
        let password = PasswordGenerator.make()
        let hash = try await services.credentials.hash(password: password)
        guard try await services.users.addFirst(username: "admin", passwordHash: hash, role: .admin) != nil else {
            return nil
        }
        return ("admin", password)
    }
}

/// Random passwords people can type: 20 characters without look-alikes (about 110 bits).
enum PasswordGenerator {
    private static let alphabet = Array("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    static func make(length: Int = 20) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
    }
}

import Mongo
import ServiceLifecycle

/// Closes the database pool once the server has stopped (services stop in reverse order).
struct PoolService: Service {
    let pool: MongoClientPool

    func run() async throws {
        try? await gracefulShutdown()
        await pool.close()
    }
}

import Mongo

/// Opens a database pool for `uri`, runs `body` with it, and closes it on every path: the one way the
/// commands reach a database.
func withPool<T>(uri: String, _ body: (MongoClientPool) async throws -> T) async throws -> T {
    let pool = try MongoClientPool(configuration: MongoConfiguration(uri: uri))
    do {
        let result = try await body(pool)
        await pool.close()
        return result
    } catch {
        await pool.close()
        throw error
    }
}

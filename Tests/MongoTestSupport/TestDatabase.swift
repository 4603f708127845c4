import Foundation
import Mongo

/// The test database that `make test` starts, and a fresh database in it for each test.
public enum TestDatabase {
    /// Why a test cannot run: `make test` sets `MONGODB_URI`; running `swift test` alone does not.
    public struct NotConfigured: Error, CustomStringConvertible {
        public var description: String { "MONGODB_URI is not set: run the tests with `make test`" }
    }

    /// The connection string of the test database server.
    public static func uri() throws -> String {
        guard let uri = ProcessInfo.processInfo.environment["MONGODB_URI"], !uri.isEmpty else {
            throw NotConfigured()
        }
        return uri
    }

    /// One pool for the whole test process (the server-selection timeout is short: the server is local).
    public static func sharedPool() throws -> MongoClientPool {
        try poolBox.get()
    }

    /// Runs `body` with a database of its own, named from the test, dropped afterwards.
    public static func with<T>(
        _ test: String = #function,
        _ body: (MongoDatabase) async throws -> T
    ) async throws -> T {
        let database = try sharedPool().database(name(for: test))
        do {
            let result = try await body(database)
            try await database.drop()
            return result
        } catch {
            try? await database.drop()
            throw error
        }
    }

    /// A unique database name for `test`, within MongoDB's 63-character limit.
    public static func name(for test: String) -> String {
        let cleaned = test.prefix(while: { $0 != "(" }).filter { $0.isLetter || $0.isNumber }
        return "t_\(cleaned.prefix(40))_\(UInt32.random(in: 0...UInt32.max))"
    }

    private static let poolBox = PoolBox()

    private final class PoolBox: Sendable {
        private let result: Result<MongoClientPool, any Error>
        init() {
            result = Result {
                try MongoClientPool(configuration: MongoConfiguration(uri: try TestDatabase.uri(), maxPoolSize: 8))
            }
        }
        func get() throws -> MongoClientPool { try result.get() }
    }
}

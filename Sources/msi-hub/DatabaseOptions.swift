import ArgumentParser
import DAO
import Foundation
import HubCore
import HubServer

/// Options every command shares: where the database is.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("mongodb-uri"), help: "The database (MONGODB_URI).")
    var mongoURI: String?

    /// The configuration from the environment, with `settings` (`--name value` flags for the variables) and this
    /// command's flags on top.
    func configuration(settings: [String] = []) throws -> HubConfiguration {
        let environment = try HubConfiguration.environment(ProcessInfo.processInfo.environment, flags: settings)
        var configuration = try HubConfiguration.fromEnvironment(environment)
        if let mongoURI { configuration.mongoURI = mongoURI }
        return configuration
    }

    /// The services over the configured database, for one command's work.
    func withServices<T>(_ body: (HubServices) async throws -> T) async throws -> T {
        let configuration = try configuration()
        return try await withPool(uri: configuration.mongoURI) { pool in
            let services = HubServices(
                pool: pool, pseudonymKey: configuration.privacy.pseudonymKey,
                erasureBlockDays: configuration.privacy.erasureBlockDays)
            try await DatabaseIndexes.ensure(in: services.database)
            // What a command changes is recorded in the audit log as done by the command line.
            return try await AuditActor.$current.withValue(AuditActor(kind: .system, name: "msi-hub cli")) {
                try await body(services)
            }
        }
    }
}

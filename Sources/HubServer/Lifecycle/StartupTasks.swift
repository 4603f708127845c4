import DAO
import Foundation
import HubCore
import Logging
import Mongo

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
                logger.warning(
                    "the database is not reachable yet; retrying",
                    metadata: ["uri_database": "\(services.database.name)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Creates `admin` with a random password when no user exists, and prints it once.
    static func bootstrapAdmin(services: HubServices, logger: Logger) async throws {
        guard let admin = try await services.accounts.addFirstAdmin() else { return }
        logger.notice("created the first user", metadata: ["username": "\(admin.username)"])
        FileHandle.standardOutput.write(
            Data(
                """

                msi-hub: no user existed, so one was created. Log in with
                    username: \(admin.username)
                    password: \(admin.password)
                This password is shown only once; change it with `msi-hub user passwd \(admin.username)`.

                """.utf8))
    }
}

import Foundation
internal import GRDB

extension MSIClient {
    /// Removes everything the library keeps on this phone: every stored message, receipt waiting, flag, digest and
    /// setting (the tables stay, empty), the device's record and its secret (Keychain or file), and the cube's copy.
    /// For an app's "delete my account": the app asks the school's backend, which asks the hub to erase the person
    /// (`DELETE /person/:personID`); then this. The client may be used again: `start()` registers a new device.
    /// - Throws: `.database` when the store or the secret cannot be removed.
    public func eraseLocalData() async throws(MSIKitError) {
        try await registration.forget()
        try await store.database.write { db in
            let tables = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                    + "AND name NOT LIKE 'grdb_%'")
            for table in tables { try db.execute(sql: "DELETE FROM \(table.quotedDatabaseIdentifier)") }
        }
        await cubeCache.forget()
    }
}

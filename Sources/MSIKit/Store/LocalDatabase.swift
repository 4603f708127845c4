import Foundation
internal import GRDB

/// The library's SQLite file: the design's `Message` table, the device's registration state, the receipts to send
/// and the flags.
///
/// GRDB stays internal: no GRDB type appears in MSIKit's public API.
struct LocalDatabase: Sendable {
    let queue: DatabaseQueue

    /// Opens (creating if needed) the database at `path`, or an in-memory one when `path` is nil, and migrates it.
    init(path: String?) throws(MSIKitError) {
        do {
            var configuration = Configuration()
            configuration.label = "MSIKit"
            queue =
                try path.map { try DatabaseQueue(path: $0, configuration: configuration) }
                ?? DatabaseQueue(configuration: configuration)
            try Self.migrator.migrate(queue)
        } catch {
            throw MSIKitError(.database, "The local database could not be opened: \(error)", underlying: error)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        // The design's table, verbatim but for the quoted `desc` (an SQL keyword), so that a database the legacy
        // app created is adopted as it is. msi_key becomes unique so that adding a message is idempotent; copies
        // a legacy database may hold are dropped first, keeping the first stored.
        migrator.registerMigration("message") { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS Message (
                    ID INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, msi_key VARCHAR(100), topic_key VARCHAR (100),
                    dist VARCHAR (50), title VARCHAR(500), "desc" VARCHAR(500), message VARCHAR(1500), timestamp INTEGER
                    );
                    DELETE FROM Message WHERE ID NOT IN (SELECT MIN(ID) FROM Message GROUP BY msi_key);
                    CREATE UNIQUE INDEX IF NOT EXISTS Message_msi_key ON Message(msi_key);
                    CREATE INDEX IF NOT EXISTS Message_timestamp ON Message(timestamp);
                    """)
        }
        // One row: who this device is to the hub and how far its initialisation got.
        migrator.registerMigration("device") { db in
            try db.execute(
                sql: """
                    CREATE TABLE msikit_device (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        hub TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        device_secret TEXT NOT NULL,
                        registration TEXT NOT NULL,
                        phase TEXT NOT NULL
                    );
                    """)
        }
        // Messages to persons and groups: no topic_key, the sender's data (a JSON object of strings, NULL when it
        // sent none), how the message reached the device ("person" or "group") and through which group.
        migrator.registerMigration("person-messages") { db in
            try db.execute(
                sql: """
                    ALTER TABLE Message ADD COLUMN data TEXT;
                    ALTER TABLE Message ADD COLUMN audience TEXT;
                    ALTER TABLE Message ADD COLUMN group_id TEXT;
                    CREATE INDEX IF NOT EXISTS Message_group_id ON Message(group_id);
                    """)
        }
        // The receipts not yet sent to the hub (`ReceiptQueue`), one per message and event.
        migrator.registerMigration("receipts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE msikit_receipt (
                        msi_key TEXT NOT NULL,
                        event TEXT NOT NULL,
                        response TEXT,
                        at INTEGER NOT NULL,
                        PRIMARY KEY (msi_key, event)
                    );
                    """)
        }
        // Urgency and acknowledgement requested: the level as the hub names it (NULL: active), whether the sender
        // asks for an acknowledgement, and the responses it offers (a JSON array of strings, NULL when none).
        migrator.registerMigration("acknowledgement") { db in
            try db.execute(
                sql: """
                    ALTER TABLE Message ADD COLUMN urgency TEXT;
                    ALTER TABLE Message ADD COLUMN ack INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE Message ADD COLUMN ack_responses TEXT;
                    """)
        }
        // Languages and banners: the language of the texts, the other languages' texts (a JSON object of
        // {title, desc, text}, NULL when none), the poster, the kind (NULL: general), whether the person may dismiss
        // it, and when it expires (Unix ms, NULL: no expiry).
        migrator.registerMigration("broadcast") { db in
            try db.execute(
                sql: """
                    ALTER TABLE Message ADD COLUMN lang TEXT;
                    ALTER TABLE Message ADD COLUMN translations TEXT;
                    ALTER TABLE Message ADD COLUMN image TEXT;
                    ALTER TABLE Message ADD COLUMN kind TEXT;
                    ALTER TABLE Message ADD COLUMN dismissible INTEGER NOT NULL DEFAULT 1;
                    ALTER TABLE Message ADD COLUMN expires_at INTEGER;
                    """)
        }
        // The flags non-display messages set (`FlagStore`): each flag's value, expiry (Unix ms, NULL: none), and the
        // message that set it with its timestamp (an older message never overrides a newer one's value); and the
        // non-display messages applied, so that each is applied and reported once and a catch-up starts after them.
        migrator.registerMigration("flags") { db in
            try db.execute(
                sql: """
                    CREATE TABLE msikit_flag (
                        name TEXT PRIMARY KEY,
                        value TEXT NOT NULL,
                        expires_at INTEGER,
                        msi_key TEXT NOT NULL,
                        set_at INTEGER NOT NULL
                    );
                    CREATE TABLE msikit_background (
                        msi_key TEXT PRIMARY KEY,
                        timestamp INTEGER NOT NULL
                    );
                    """)
        }
        // Corrections: whether a message's texts were replaced by its sender's correction.
        migrator.registerMigration("corrections") { db in
            try db.execute(sql: "ALTER TABLE Message ADD COLUMN corrected INTEGER NOT NULL DEFAULT 0")
        }
        // Acknowledged: whether the person answered the message, here or on another of their devices.
        migrator.registerMigration("acknowledged") { db in
            try db.execute(sql: "ALTER TABLE Message ADD COLUMN acknowledged INTEGER NOT NULL DEFAULT 0")
        }
        // The last daily digest received (`DigestStore`): one row.
        migrator.registerMigration("digest") { db in
            try db.execute(
                sql:
                    "CREATE TABLE msikit_digest (slot INTEGER PRIMARY KEY, timestamp INTEGER NOT NULL, json TEXT NOT NULL)"
            )
        }
        return migrator
    }

    /// Reads in a transaction, mapping any failure to `.database` (or `.cancelled`).
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MSIKitError) -> T {
        do {
            return try await queue.read(body)
        } catch {
            throw Self.map(error)
        }
    }

    /// Writes in a transaction, mapping any failure to `.database` (or `.cancelled`).
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MSIKitError) -> T {
        do {
            return try await queue.write(body)
        } catch {
            throw Self.map(error)
        }
    }

    private static func map(_ error: any Error) -> MSIKitError {
        if error is CancellationError {
            return MSIKitError(.cancelled, "The task was cancelled.", underlying: error)
        }
        return MSIKitError(.database, "The local database failed: \(error)", underlying: error)
    }
}

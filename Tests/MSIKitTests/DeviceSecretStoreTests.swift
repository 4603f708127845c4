import Foundation
import GRDB
@testable import MSIKit
import Testing

/// Where the device's secret is kept: never in `msikit.sqlite`, in a file only its owner may read where there is
/// no Keychain, and moved out of the database of an earlier version on first open.
@Suite("Device secret store")
struct DeviceSecretStoreTests {
    static let account = "https://msi.example.edu/device/65a1b2c3d4e5f60718293a4b"

    /// A fresh folder, removed after `body`.
    static func withFolder(_ body: (URL) async throws -> Void) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await body(folder)
    }

    /// The file's permission bits.
    static func mode(of path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
    }

    @Test func theFileStoreCreatesItsFileWithMode0600AndReadsItBack() async throws {
        try await Self.withFolder { folder in
            let store = FileSecretStore(directory: folder)
            #expect(try store.secret(for: Self.account) == nil)
            try store.save("msd_first", for: Self.account)
            #expect(try Self.mode(of: store.path) == 0o600)
            #expect(try store.secret(for: Self.account) == "msd_first")
            #expect(try store.secret(for: Self.account + "0") == nil, "another device's account")

            // A file someone left readable is replaced, not written into: the new one is 0600 too.
            #expect(
                FileManager.default.createFile(
                    atPath: store.path, contents: Data("{}".utf8),
                    attributes: [.posixPermissions: 0o644]))
            try store.save("msd_second", for: Self.account)
            #expect(try Self.mode(of: store.path) == 0o600)
            #expect(try store.secret(for: Self.account) == "msd_second")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["msikit.device-secret"],
                "no temporary file left")

            try store.remove(for: Self.account + "0")
            #expect(try store.secret(for: Self.account) == "msd_second", "another account's removal leaves it")
            try store.remove(for: Self.account)
            #expect(!FileManager.default.fileExists(atPath: store.path))
            #expect(try store.secret(for: Self.account) == nil)
        }
    }

    @Test func theDatabaseNoLongerHoldsTheSecret() async throws {
        try await Self.withFolder { folder in
            let path = folder.appendingPathComponent("msikit.sqlite").path
            let secret = "msd_" + String(repeating: "s3cr3t", count: 7)
            let store = FileSecretStore(directory: folder)
            do {
                let database = try LocalDatabase(path: path)
                let record = DeviceRecord(
                    hub: "https://msi.example.edu", deviceID: "65a1b2c3d4e5f60718293a4b",
                    deviceSecret: secret, registration: "fcm-token", phase: .initialised)
                try await record.save(to: database, secrets: store)
                #expect(try await DeviceRecord.load(from: database, secrets: store) == record)
                #expect(try store.secret(for: record.secretAccount) == secret)
            }
            // Not in the row, and nowhere in the file's bytes.
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(bytes.range(of: Data("fcm-token".utf8)) != nil, "the row is in the file")
            #expect(bytes.range(of: Data(secret.utf8)) == nil)
            let database = try LocalDatabase(path: path)
            #expect(try await Self.storedSecret(in: database) == "")
        }
    }

    @Test func anEarlierVersionsRowHasItsSecretMovedToTheStoreOnFirstOpen() async throws {
        try await Self.withFolder { folder in
            let database = try LocalDatabase(path: folder.appendingPathComponent("msikit.sqlite").path)
            // As the previous version saved it: the secret in the row.
            try await database.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO msikit_device (id, hub, device_id, device_secret, registration, phase)
                        VALUES (1, 'https://msi.example.edu', '65a1b2c3d4e5f60718293a4b', 'msd_old', 'fcm-token', 'initialised')
                        """)
            }
            let store = FileSecretStore(directory: folder)
            let loaded = try #require(try await DeviceRecord.load(from: database, secrets: store))
            #expect(loaded.deviceSecret == "msd_old" && loaded.phase == .initialised)
            #expect(try store.secret(for: Self.account) == "msd_old")
            #expect(try Self.mode(of: store.path) == 0o600)
            #expect(try await Self.storedSecret(in: database) == "")
            // Later opens read it from the store.
            #expect(try await DeviceRecord.load(from: database, secrets: store)?.deviceSecret == "msd_old")

            // A row whose secret is gone (the folder restored on another phone) is no registration.
            try store.remove(for: Self.account)
            #expect(try await DeviceRecord.load(from: database, secrets: store) == nil)
        }
    }

    @Test func aClientWithoutAFolderKeepsTheSecretInMemory() async throws {
        let store = MemorySecretStore()
        try store.save("msd_memory", for: Self.account)
        #expect(try store.secret(for: Self.account) == "msd_memory")
        try store.remove(for: Self.account)
        #expect(try store.secret(for: Self.account) == nil)
    }

    /// The row's `device_secret` column.
    static func storedSecret(in database: LocalDatabase) async throws -> String? {
        try await database.read { db in try String.fetchOne(db, sql: "SELECT device_secret FROM msikit_device") }
    }
}

internal import GRDB

/// The device's row in `msikit_device`: who it is to which hub, with which FCM token, and how far set-up got; its
/// secret is kept in a `DeviceSecretStore`, never in the row.
struct DeviceRecord: Sendable, Hashable {
    enum Phase: String, Sendable {
        case registered, initialised
    }

    var hub: String
    var deviceID: String
    /// The secret, as read from or saved to the `DeviceSecretStore`.
    var deviceSecret: String
    var registration: String
    var phase: Phase

    var state: RegistrationState {
        switch phase {
        case .registered: .registered(deviceID: deviceID)
        case .initialised: .initialised(deviceID: deviceID)
        }
    }

    /// The account its secret is saved under in a `DeviceSecretStore`: the hub's URL and the device's id.
    var secretAccount: String { "\(hub)/device/\(deviceID)" }

    /// The stored row with its secret from `secrets`, if the device has registered. A row of an earlier version
    /// holds the secret itself: it moves to `secrets`, then leaves the row. A row whose secret `secrets` lacks (the
    /// folder restored on another phone, whose Keychain did not follow) is no registration: the app registers anew.
    static func load(from database: LocalDatabase, secrets: any DeviceSecretStore) async throws(MSIKitError)
        -> DeviceRecord?
    {
        let stored = try await database.read { db -> DeviceRecord? in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM msikit_device WHERE id = 1") else { return nil }
            return DeviceRecord(
                hub: row["hub"], deviceID: row["device_id"], deviceSecret: row["device_secret"],
                registration: row["registration"],
                // A phase this version does not know is treated as unfinished: initialising again is harmless.
                phase: Phase(rawValue: row["phase"]) ?? .registered)
        }
        guard var record = stored else { return nil }
        if !record.deviceSecret.isEmpty {
            // Saved first, then blanked: a stop in between moves it again on the next open.
            try secrets.save(record.deviceSecret, for: record.secretAccount)
            let deviceID = record.deviceID
            try await database.write { db in
                try db.execute(
                    sql: "UPDATE msikit_device SET device_secret = '' WHERE id = 1 AND device_id = ?",
                    arguments: [deviceID])
            }
            return record
        }
        guard let secret = try secrets.secret(for: record.secretAccount) else { return nil }
        record.deviceSecret = secret
        return record
    }

    /// Saves the secret in `secrets`, then replaces the stored row with this one, without the secret.
    func save(to database: LocalDatabase, secrets: any DeviceSecretStore) async throws(MSIKitError) {
        try secrets.save(deviceSecret, for: secretAccount)
        let record = self
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO msikit_device (id, hub, device_id, device_secret, registration, phase)
                    VALUES (1, ?, ?, '', ?, ?)
                    """,
                arguments: [record.hub, record.deviceID, record.registration, record.phase.rawValue])
        }
    }
}

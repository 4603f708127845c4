internal import GRDB

/// The device's row in `msikit_device`: who it is to which hub, with which FCM token, and how far set-up got.
struct DeviceRecord: Sendable, Hashable {
    enum Phase: String, Sendable {
        case registered, initialised
    }

    var hub: String
    var deviceID: String
    var deviceSecret: String
    var registration: String
    var phase: Phase

    var state: RegistrationState {
        switch phase {
        case .registered: .registered(deviceID: deviceID)
        case .initialised: .initialised(deviceID: deviceID)
        }
    }

    /// The stored row, if the device has registered.
    static func load(from database: LocalDatabase) async throws(MSIKitError) -> DeviceRecord? {
        try await database.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM msikit_device WHERE id = 1") else { return nil }
            return DeviceRecord(
                hub: row["hub"], deviceID: row["device_id"], deviceSecret: row["device_secret"],
                registration: row["registration"],
                // A phase this version does not know is treated as unfinished: initialising again is harmless.
                phase: Phase(rawValue: row["phase"]) ?? .registered)
        }
    }

    /// Replaces the stored row with this one.
    func save(to database: LocalDatabase) async throws(MSIKitError) {
        let record = self
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO msikit_device (id, hub, device_id, device_secret, registration, phase)
                    VALUES (1, ?, ?, ?, ?, ?)
                    """,
                arguments: [record.hub, record.deviceID, record.deviceSecret, record.registration, record.phase.rawValue])
        }
    }
}

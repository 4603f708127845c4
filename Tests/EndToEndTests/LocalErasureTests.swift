import Foundation
import MSIKit
import MongoTestSupport
import Testing

/// MSIKit's `eraseLocalData()` against a real hub: a registered phone with a message, a flag, its secret and the
/// cube on disk forgets all of it, and its next start registers a new device.
@Suite("MSIKit erases what it keeps on the phone")
struct LocalErasureTests {
    @Test func eraseLocalDataRemovesTheStoreTheSecretAndTheCubeAndTheNextStartRegistersAnew() async throws {
        try await LiveHub.with { hub in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "erase-local-1", directory: directory)
            try await phone.start()
            let first = try #require(try await phone.client.registrationState().deviceID)
            let key = try await hub.send(SchoolCube.closures, title: "Snow day")
            try await hub.waitUntilRelayed()
            try await phone.catchUp()
            #expect(try await phone.storedKeys() == [key])
            _ = try await phone.client.cube()
            let secretFile = directory.appendingPathComponent("msikit.device-secret").path
            let cubeFile = directory.appendingPathComponent("cube.json").path
            #expect(
                FileManager.default.fileExists(atPath: secretFile) && FileManager.default.fileExists(atPath: cubeFile))

            try await phone.client.eraseLocalData()
            #expect(try await phone.storedKeys().isEmpty)
            #expect(try await phone.client.registrationState() == .notRegistered)
            #expect(
                !FileManager.default.fileExists(atPath: secretFile) && !FileManager.default.fileExists(atPath: cubeFile)
            )
            // The same client starts again as a new phone.
            try await phone.start()
            let second = try #require(try await phone.client.registrationState().deviceID)
            #expect(second != first)
        }
    }
}

import Foundation
import MSIKit
import Testing

/// The cube with no hub listening: the last copy kept in the library's folder is what an offline start has.
@Suite("Cube offline")
struct OfflineCubeTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-\(UUID().uuidString)")
    let nowhere = URL(string: "http://127.0.0.1:9")!

    @Test func theCopyOnDiskServesWhenTheHubCannotBeReached() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fixture = try #require(
            Bundle.module.url(forResource: "cube", withExtension: "json", subdirectory: "Fixtures"))
        try FileManager.default.copyItem(at: fixture, to: directory.appendingPathComponent("cube.json"))
        let client = try MSIClient(configuration: .init(hub: nowhere, directory: directory), push: SilentPush())
        #expect(try await client.cube() == fixtureCube())
        #expect(try await client.cube(refresh: true) == fixtureCube())
    }

    @Test func withoutACopyTheNetworkFailureIsReported() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = try MSIClient(configuration: .init(hub: nowhere, directory: directory), push: SilentPush())
        await #expect { try await client.cube() } throws: { ($0 as? MSIKitError)?.code == .network }
    }
}

import DAO
import Foundation
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The `msi-hub` executable's administration commands, run as a separate process against the test database:
/// they go through the same services as the portal, so their consequences are the portal's.
@Suite struct CommandLineTests {
    @Test func aPasswordResetThroughTheCommandLineEndsTheUsersPortalSessions() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            #expect(try await ann.get("/portal").status == .ok)

            let result = try await Self.run(
                ["user", "passwd", "ann", "--mongodb-uri", try HubProcess.uri(of: hub.database)],
                input: "a-brand-new-password\n")
            #expect(result.status == 0, "\(result.output)")

            // The session is gone from the database: the portal sends ann to log in, and only the new password works.
            #expect(try await ann.get("/portal").status == .seeOther)
            #expect(try await ann.login("ann", HubHarness.annPassword).status == .unauthorized)
            #expect(try await ann.login("ann", "a-brand-new-password").status == .seeOther)
        }
    }

    @Test func theRoleCommandItsHelpPromisesChangesTheRole() async throws {
        try await HubHarness.with { hub in
            let uri = try HubProcess.uri(of: hub.database)
            #expect(try await Self.run(["user", "--help"], input: "").output.contains("role"))
            #expect(try await Self.run(["user", "role", "ann", "admin", "--mongodb-uri", uri], input: "").status == 0)
            let ann = try #require(try await hub.database.collection(CollectionName.users).findOne(["username": "ann"]))
            #expect(ann["role"]?.stringValue == "admin")
            // A name the username rule refuses never reaches the database.
            #expect(
                try await Self.run(["user", "add", "bad name", "--mongodb-uri", uri], input: "long-enough-pw\n").status
                    != 0)
        }
    }

    /// Runs the executable with `arguments`, `input` on standard input; its exit status and output (waited for
    /// without holding a thread).
    static func run(_ arguments: [String], input: String) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = HubProcess.executable
        process.arguments = arguments
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "msi-hub-cli-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        let stdin = Pipe()
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = output
        let exit = ProcessExit(of: process)
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        await exit.wait()
        return (process.terminationStatus, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
    }
}

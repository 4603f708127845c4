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

            let result = try Self.run(["user", "passwd", "ann", "--mongodb-uri", try HubProcess.uri(of: hub.database)],
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
            #expect(try Self.run(["user", "--help"], input: "").output.contains("role"))
            #expect(try Self.run(["user", "role", "ann", "admin", "--mongodb-uri", uri], input: "").status == 0)
            let ann = try #require(try await hub.database.collection(CollectionName.users).findOne(["username": "ann"]))
            #expect(ann["role"]?.stringValue == "admin")
            // A name the username rule refuses never reaches the database.
            #expect(try Self.run(["user", "add", "bad name", "--mongodb-uri", uri], input: "long-enough-pw\n").status != 0)
        }
    }

    /// Runs the executable with `arguments`, `input` on standard input; its exit status and output.
    static func run(_ arguments: [String], input: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = HubProcess.executable
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}

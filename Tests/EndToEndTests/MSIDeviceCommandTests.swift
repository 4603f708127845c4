import DAO
import FakeFCM
import Foundation
import MSIKit
import Mongo
import MongoTestSupport
import Testing

/// The simulated phone's command line (`msi-device`) against a real hub: `bind --assertion`, `unbind`, the
/// audience and data of a message in `messages`, and the person's `settings`.
@Suite("msi-device binds, unbinds and shows messages to persons and groups")
struct MSIDeviceCommandTests {
    @Test func bindUnbindAndMessagesOfTheSimulatedPhone() async throws {
        try await LiveHub.with(persons: PersonBindingAgainstHubTests.persons()) { hub in
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("msi-device-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let stateOption = ["--state", state.path]
            let registered = try await Self.run(
                [
                    "register", "--hub", hub.url.absoluteString, "--fake-fcm",
                    hub.fake.baseURL,
                ] + stateOption)
            #expect(registered.status == 0 && registered.output.contains("registered "), "\(registered.output)")

            let assertion = try await PersonBindingAgainstHubTests.assertion("student-7")
            let bound = try await Self.run(["bind", "--assertion", assertion] + stateOption)
            #expect(bound.status == 0 && bound.output.contains("bound to student-7"), "\(bound.output)")
            #expect(try await PersonBindingAgainstHubTests.storedPerson(in: hub) == "student-7")
            let forged = try await PersonBindingAgainstHubTests.assertion(
                "intruder", secret: "not-the-school-secret-0123456789abcdef")
            let refused = try await Self.run(["bind", "--assertion", forged] + stateOption)
            #expect(refused.status != 0 && refused.output.contains("invalid_assertion"), "\(refused.output)")
            #expect(try await PersonBindingAgainstHubTests.storedPerson(in: hub) == "student-7")

            try await hub.putGroup("chess-club", members: ["student-7"])
            // A group message as the listener stores it, and a subject's message: `messages` tells them apart.
            let store = try MessageStore(path: state.appendingPathComponent("msikit/msikit.sqlite").path)
            try await store.add(
                Message(
                    msiKey: "65f0c0ffee0000000000e001", topicKey: "", distribution: .alert, title: "Chess club",
                    desc: "See you at 4", text: "See you at 4 in room 12", timestamp: 1_773_151_200_000,
                    data: ["room": "r-17", "link": "school://rooms/r-17"], audience: .group, groupID: "chess-club"))
            try await store.add(
                Message(
                    msiKey: "65f0c0ffee0000000000e002", topicKey: "a-b-c", distribution: .information, title: "Menu",
                    desc: "", text: "Soup", timestamp: 1_773_151_100_000))
            let messages = try await Self.run(["messages"] + stateOption)
            let lines = messages.output.split(separator: "\n").map(String.init)
            #expect(
                lines.contains {
                    $0.hasSuffix(
                        "65f0c0ffee0000000000e001 ALERT Chess club: See you at 4 to=group:chess-club "
                            + "data: link=school://rooms/r-17 room=r-17")
                }, "\(messages.output)")
            #expect(lines.contains { $0.hasSuffix("65f0c0ffee0000000000e002 INFO Menu") }, "\(messages.output)")

            // The person's settings: changed and printed, and refused as the hub refuses them.
            let settings = try await Self.run(
                ["settings", "--group", "chess-club=off", "--quiet", "22:00-07:00@Europe/Berlin", "--locale", "de"]
                    + stateOption)
            #expect(settings.status == 0, "\(settings.output)")
            let printed = settings.output.split(separator: "\n").map(String.init)
            for line in [
                "PERSON student-7", "QUIET 22:00-07:00 Europe/Berlin", "LOCALE de", "GROUP chess-club off",
            ] {
                #expect(printed.contains(line), "\(line) in \(settings.output)")
            }
            // No digest received yet (`run` keeps the one the hub pushes; DigestPayloadTests cover the keeping).
            let digest = try await Self.run(["digest"] + stateOption)
            #expect(digest.status == 0 && digest.output.contains("NO DIGEST"), "\(digest.output)")
            let badMode = try await Self.run(["settings", "--group", "chess-club=loud"] + stateOption)
            #expect(badMode.status != 0 && badMode.output.contains("ID=instant"), "\(badMode.output)")

            let unbound = try await Self.run(["unbind"] + stateOption)
            #expect(unbound.status == 0 && unbound.output.contains("unbound"), "\(unbound.output)")
            #expect(try await PersonBindingAgainstHubTests.storedPerson(in: hub) == nil)
        }
    }

    /// The `msi-device` executable `swift build` made beside the test bundle.
    static var executable: URL {
        let bundle = Bundle.main.bundleURL
        let candidates = [
            bundle.deletingLastPathComponent().appendingPathComponent("msi-device"),
            bundle.appendingPathComponent("msi-device"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Runs `msi-device` with `arguments`; its exit status and output (standard output and error together).
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "msi-device-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        let exit = ProcessExit(of: process)
        try process.run()
        await exit.wait()
        return (process.terminationStatus, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
    }
}

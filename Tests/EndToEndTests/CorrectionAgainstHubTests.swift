import FakeFCM
import Foundation
import MSIKit
import MongoTestSupport
import Testing

/// A correction and a withdrawal reach a simulated phone through the real hub and the fake FCM: `msi-device run`
/// prints them, and MSIKit's store holds the corrected texts, then no message at all.
@Suite("Corrections and withdrawals on the phone")
struct CorrectionAgainstHubTests {
    @Test func msiDeviceShowsTheCorrectionAndTheWithdrawal() async throws {
        try await LiveHub.with { hub in
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("msi-device-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let stateOption = ["--state", state.path]
            let token = "e2e-correction-phone"
            let registered = try await MSIDeviceCommandTests.run(
                ["register", "--hub", hub.url.absoluteString, "--fake-fcm", hub.fake.baseURL, "--registration", token]
                    + stateOption)
            #expect(registered.status == 0, "\(registered.output)")
            try await hub.waitUntilApplied(token, SchoolCube.automatic)

            let key = try await hub.send(SchoolCube.exams, title: "Snow dya")
            try await hub.waitUntilRelayed()
            let first = try await MSIDeviceCommandTests.run(["run", "--for", "1"] + stateOption)
            #expect(first.output.contains("ALERT Snow dya"), "\(first.output)")

            let (corrected, body) = try await hub.request("PUT", "message/\(key)", ["title": "Snow day"])
            #expect(corrected == 200, "\(String(decoding: body, as: UTF8.self))")
            try await hub.waitUntilRelayed()
            let second = try await MSIDeviceCommandTests.run(["run", "--for", "1"] + stateOption)
            #expect(second.output.contains("corrected \(key): Snow day"), "\(second.output)")
            let store = try MessageStore(path: state.appendingPathComponent("msikit/msikit.sqlite").path)
            let stored = try #require(try await store.message(msiKey: key))
            #expect(stored.title == "Snow day" && stored.corrected)

            let (withdrawn, answer) = try await hub.request("DELETE", "message/\(key)", ["reason": "Wrong day"])
            #expect(withdrawn == 200, "\(String(decoding: answer, as: UTF8.self))")
            try await hub.waitUntilRelayed()
            let third = try await MSIDeviceCommandTests.run(["run", "--for", "1"] + stateOption)
            #expect(third.output.contains("withdrawn \(key)"), "\(third.output)")
            #expect(try await store.message(msiKey: key) == nil)
            let messages = try await MSIDeviceCommandTests.run(["messages"] + stateOption)
            #expect(!messages.output.contains(key), "\(messages.output)")
        }
    }
}

import FakeFCM
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import MSIKit
import MongoTestSupport
import Testing

/// A message that asks for an acknowledgement reaches MSIKit with its urgency and responses, against a real hub and
/// the fake FCM: pushed (the pop-up's flag makes the library read the request from the hub) and caught up.
@Suite("MSIKit gets acknowledgement requests from a real hub")
struct AcknowledgementAgainstHubTests {
    /// POST /message of an Alert to Closures that asks for an acknowledgement with `responses`, at `urgency`.
    static func ask(_ hub: LiveHub, title: String, urgency: String, responses: [String]) async throws -> String {
        let (status, data) = try await hub.request(
            "POST", "message",
            [
                "title": title, "desc": "Answer now", "message": "Tell us you are safe.",
                "topic_key": SchoolCube.closures.topicKey, "distribution": "Alert", "urgency": urgency,
                "ack": ["responses": responses, "within_s": 3_600, "resend": 1],
            ])
        try #require(status == 201, "POST /message answered \(status): \(String(decoding: data, as: UTF8.self))")
        return try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["msi_key"] as? String)
    }

    @Test func aPushedRequestArrivesWithItsUrgencyAndResponsesAndAnOrdinaryMessageWithout() async throws {
        try await LiveHub.with { hub in
            let phone = try await hub.listeningPhone("ack-push-1")
            defer { phone.stop() }
            let key = try await Self.ask(
                hub, title: "Lockdown", urgency: "critical",
                responses: ["I'm safe", "I need help"])
            try await eventually("the request is shown") { phone.shownKeys == [key] }
            let shown = try #require(phone.shownMessages.first)
            #expect(shown.urgency == .critical && shown.acknowledgementRequested)
            #expect(shown.acknowledgementResponses == ["I'm safe", "I need help"])
            guard case .alert(let title, _, _) = shown else {
                Issue.record("an Alert must be shown, got \(shown)")
                return
            }
            #expect(title == "Lockdown")
            let stored = try #require(try await phone.client.store.messages().first { $0.msiKey == key })
            #expect(stored.acknowledgementResponses == ["I'm safe", "I need help"] && stored.urgency == .critical)

            let ordinary = try await hub.send(SchoolCube.closures, title: "Campus open")
            try await eventually("the ordinary message is shown") {
                phone.shownKeys == [key, ordinary]
            }
            let plain = try #require(phone.shownMessages.last)
            #expect(!plain.acknowledgementRequested && plain.acknowledgementResponses.isEmpty)
            #expect(plain.urgency == .active)
            #expect(phone.listenerErrors.isEmpty, "\(phone.listenerErrors)")
        }
    }

    @Test func aRequestSentWhileThePhoneWasOffArrivesByTheCatchUp() async throws {
        try await LiveHub.with { hub in
            let phone = try await hub.listeningPhone("ack-catch-up-1")
            phone.stop()
            let key = try await Self.ask(hub, title: "Are you safe?", urgency: "time-sensitive", responses: ["Yes"])
            try await hub.waitUntilRelayed()
            try await phone.catchUp()
            let shown = try #require(phone.shownMessages.first { $0.message.msiKey == key })
            #expect(shown.urgency == .timeSensitive && shown.acknowledgementRequested)
            #expect(shown.acknowledgementResponses == ["Yes"])
            // The app answers with one of them.
            try await phone.client.acknowledge(msiKey: key, response: shown.acknowledgementResponses[0])
            #expect(try await phone.client.pendingReceipts() == 0)
        }
    }

    @Test func msiDeviceShowsTheUrgencyAndTheResponses() async throws {
        try await LiveHub.with { hub in
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("msi-device-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let stateOption = ["--state", state.path]
            let registered = try await MSIDeviceCommandTests.run(
                ["register", "--hub", hub.url.absoluteString, "--fake-fcm", hub.fake.baseURL] + stateOption)
            #expect(registered.status == 0, "\(registered.output)")
            let key = try await Self.ask(
                hub, title: "Lockdown", urgency: "critical",
                responses: ["I'm safe", "I need help"])
            try await hub.waitUntilRelayed()
            // `run` catches up first and prints what it brought.
            let ran = try await MSIDeviceCommandTests.run(["run", "--for", "1"] + stateOption)
            #expect(
                ran.output.contains("ALERT Lockdown: Answer now urgency=critical ack: I'm safe | I need help"),
                "\(ran.output)")
            let messages = try await MSIDeviceCommandTests.run(["messages"] + stateOption)
            #expect(
                messages.output.split(separator: "\n").contains {
                    $0.hasSuffix(
                        "\(key) ALERT Lockdown: Answer now urgency=critical ack: I'm safe | I need help")
                }, "\(messages.output)")
        }
    }
}

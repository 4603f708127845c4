import FakeFCM
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import MSIKit
import MongoTestSupport
import Testing

/// MSIKit's receipts against a real hub and the fake FCM: a message reported received without the app asking, an
/// acknowledgement with a response, and receipts made offline sent once the hub is back, as the reach report shows.
@Suite("MSIKit receipts against a real hub", .tags(.faults))
struct ReceiptsAgainstHubTests {
    /// The reach report of `key` as the admin reads it.
    static func report(_ key: String, on hub: LiveHub) async throws -> [String: Any] {
        let (status, data) = try await hub.request("GET", "message/\(key)/receipts")
        try #require(status == 200, "GET receipts answered \(status): \(String(decoding: data, as: UTF8.self))")
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func aPushedMessageIsReportedReceivedByItselfAndAcknowledgedByTheApp() async throws {
        try await LiveHub.with { hub in
            let phone = try await hub.listeningPhone("receipt-1")
            defer { phone.stop() }
            let key = try await hub.send(SchoolCube.closures, title: "Lockdown")
            try await eventually("the message is shown") { phone.shownKeys == [key] }
            try await eventually("the hub has its received receipt") {
                try await Self.report(key, on: hub)["received"] as? Int == 1
            }
            #expect(try await Self.report(key, on: hub)["acknowledged"] as? Int == 0)

            try await phone.client.opened(msiKey: key)
            try await phone.client.acknowledge(msiKey: key, response: "I'm safe")
            #expect(try await phone.client.pendingReceipts() == 0)
            let report = try await Self.report(key, on: hub)
            #expect(report["opened"] as? Int == 1)
            #expect(report["acknowledged"] as? Int == 1)
            // The message offered no responses: the text is free, counted apart, never a field of the counts.
            #expect((report["responses"] as? [String: Int]) == [:])
            #expect(report["free_text_responses"] as? Int == 1)
            #expect(report["not_answered"] as? Int == 0)
            // A second acknowledgement changes nothing.
            try await phone.client.acknowledge(msiKey: key, response: "I need help")
            #expect(try await Self.report(key, on: hub)["free_text_responses"] as? Int == 1)
        }
    }

    @Test func receiptsMadeOfflineWaitInTheFileAndGoWhenTheHubIsBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "msikit-receipts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LiveHub.with { hub in
            try await FlakyGateway.with(to: hub.url) { gateway in
                // Registered (and so subscribed to the Forced subject) before the message is sent: its audience.
                let phone = try SimulatedPhone(
                    hub: gateway.url, fake: hub.fake, token: "offline-receipts",
                    directory: directory)
                try await phone.start()
                try await hub.waitUntilApplied("offline-receipts", SchoolCube.automatic)
                phone.listen()
                defer { phone.stop() }
                let key = try await hub.send(SchoolCube.closures, title: "Campus closed")
                try await eventually("the message is shown") { phone.shownKeys == [key] }
                try await eventually("reported received") {
                    try await Self.report(key, on: hub)["received"] as? Int == 1
                }

                // The hub cannot be reached: the acknowledgement waits in the phone's file, across a restart.
                gateway.fail { _, path in path.hasSuffix("/receipts") }
                try await phone.client.acknowledge(msiKey: key, response: "Seen")
                #expect(try await phone.client.pendingReceipts() == 1)
                let restarted = try SimulatedPhone(
                    hub: gateway.url, fake: hub.fake, token: "offline-receipts",
                    directory: directory)
                #expect(try await restarted.client.pendingReceipts() == 1)
                #expect(try await Self.report(key, on: hub)["acknowledged"] as? Int == 0)

                // Back: the next send takes it.
                gateway.fail { _, _ in false }
                #expect(try await restarted.client.sendReceipts() == 1)
                #expect(try await restarted.client.pendingReceipts() == 0)
                let report = try await Self.report(key, on: hub)
                #expect(report["acknowledged"] as? Int == 1)
                #expect(report["free_text_responses"] as? Int == 1)
            }
        }
    }
}

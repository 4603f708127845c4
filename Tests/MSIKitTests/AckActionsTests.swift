import Foundation
import GRDB
@testable import MSIKit
import Testing

/// Acknowledgements answered from the lock screen: the categories MSIKit registers match the hub's `MSI_ACK_<n>`,
/// a push's actions are its responses, and an action tapped queues the acknowledgement with the response it names.
@Suite("Acknowledgement actions on the lock screen")
struct AckActionsTests {
    let client: MSIClient

    /// A client whose hub cannot be reached: an acknowledgement stays queued, where the test reads it.
    init() throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        client = try MSIClient(configuration: configuration, push: SilentPush())
    }

    /// The queued acknowledgements: (msi_key, response).
    func queued() async throws -> [(String, String?)] {
        try await client.receipts.database.read { db in
            try Row.fetchAll(db, sql: "SELECT msi_key, response FROM msikit_receipt WHERE event = 'acknowledged'")
                .map { ($0["msi_key"], $0["response"]) }
        }
    }

    @Test func theCategoriesAreTheHubsAndEachHasItsResponsesActions() {
        let categories = AckActions.categories
        #expect(categories.map(\.identifier) == (0...10).map { "MSI_ACK_\($0)" })
        #expect(categories[0].actions == ["MSI_ACK_OK"])
        #expect(categories[2].actions == ["MSI_ACK_RESPONSE_0", "MSI_ACK_RESPONSE_1"])
        #expect(AckActions.category(responses: 2) == "MSI_ACK_2")
    }

    @Test func aPushsActionsAreItsResponsesInOrderOrOnePlainAcknowledgement() {
        let asking = AcknowledgementMessageTests.asking(key: "65f0c0ffee0000000000ac21")
        let actions = AckActions.actions(for: asking)
        #expect(actions.map(\.identifier) == ["MSI_ACK_RESPONSE_0", "MSI_ACK_RESPONSE_1"])
        #expect(actions.map(\.title) == ["I'm safe", "I need help"])
        let plain = AckActions.actions(
            for: AcknowledgementMessageTests.asking(key: "65f0c0ffee0000000000ac22", responses: "[]"),
            acknowledgeTitle: "Got it")
        #expect(plain.map(\.identifier) == ["MSI_ACK_OK"] && plain.map(\.title) == ["Got it"])
        #expect(AckActions.actions(for: ["msi_key": "65f0c0ffee0000000000ac23"]).isEmpty)
    }

    @Test func anActionTappedQueuesTheAcknowledgementWithItsResponse() async throws {
        let key = "65f0c0ffee0000000000ac24"
        let payload = AcknowledgementMessageTests.asking(key: key)
        _ = try await client.receive(payload: payload)
        #expect(try await client.handleAction(identifier: "MSI_ACK_RESPONSE_1", payload: payload))
        let first = try await queued()
        #expect(first.count == 1 && first.first?.0 == key && first.first?.1 == "I need help")
        #expect(try await client.store.message(msiKey: key)?.acknowledged == true)
        // Another action of the app's own is not an acknowledgement: nothing is queued.
        #expect(try await client.handleAction(identifier: "OPEN_MAP", payload: payload) == false)
        // A response the message does not offer is refused.
        let other = AcknowledgementMessageTests.asking(key: "65f0c0ffee0000000000ac25")
        await #expect(throws: MSIKitError.self) {
            try await client.handleAction(identifier: "MSI_ACK_RESPONSE_5", payload: other)
        }
        // A plain acknowledgement has no response.
        let plainKey = "65f0c0ffee0000000000ac26"
        let plain = AcknowledgementMessageTests.asking(key: plainKey, responses: "[]")
        #expect(try await client.handleAction(identifier: "MSI_ACK_OK", payload: plain))
        #expect(try await queued().contains { $0.0 == plainKey && $0.1 == nil })
    }
}

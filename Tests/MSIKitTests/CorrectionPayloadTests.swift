import Foundation
import MSIKit
import Testing

/// A correction and a withdrawal as FCM delivers them, through the client with no hub (each payload is handled
/// without the network): the stored texts are replaced and marked corrected, a withdrawn message leaves the store.
@Suite("Listener: corrections and withdrawals")
struct CorrectionPayloadTests {
    let client: MSIClient

    init() throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        client = try MSIClient(configuration: configuration, push: SilentPush())
    }

    @Test func aCorrectionReplacesTheStoredTextsAndMarksTheMessageCorrected() async throws {
        let key = "65f0c0ffee0000000000c0e1"
        _ = try await client.receive(payload: ListenerTests.dataComponent(key: key, dist: "Alert", title: "Libary"))
        var correction = ListenerTests.dataComponent(key: key, dist: "Alert", title: "Library", desc: "Open at noon")
        correction["correction"] = "1"
        let received = try await client.receive(payload: correction)
        guard case .corrected(let message) = try #require(received) else {
            Issue.record("a correction must say so, got \(String(describing: received))")
            return
        }
        #expect(message.title == "Library" && message.corrected)
        let stored = try await client.store.messages()
        #expect(stored.count == 1)
        #expect(
            stored.first?.title == "Library" && stored.first?.desc == "Open at noon" && stored.first?.corrected == true)
        // The sender's data never gains the hub's keys.
        #expect(stored.first?.data["correction"] == nil)
    }

    @Test func aCorrectionOfAMessageNeverReceivedStoresItCorrected() async throws {
        let key = "65f0c0ffee0000000000c0e2"
        var correction = ListenerTests.dataComponent(key: key, dist: "Information", title: "Fixed")
        correction["correction"] = "1"
        #expect(try await client.receive(payload: correction)?.message.title == "Fixed")
        #expect(try await client.store.messages().map(\.corrected) == [true])
    }

    @Test func aWithdrawalRemovesTheMessageOnceAndNothingElse() async throws {
        let key = "65f0c0ffee0000000000c0e3"
        let other = "65f0c0ffee0000000000c0e4"
        _ = try await client.receive(payload: ListenerTests.dataComponent(key: key, dist: "Information"))
        _ = try await client.receive(payload: ListenerTests.dataComponent(key: other, dist: "Information"))
        let received = try await client.receive(payload: ["msi_key": key, "withdrawn": "1"])
        guard case .withdrawn(let message) = try #require(received) else {
            Issue.record("a withdrawal must say so, got \(String(describing: received))")
            return
        }
        #expect(message.msiKey == key)
        #expect(try await client.store.messages().map(\.msiKey) == [other])
        // Again (a retry of the relay): nothing left to remove.
        #expect(try await client.receive(payload: ["msi_key": key, "withdrawn": "1"]) == nil)
    }

    @Test func anAcknowledgementOnAnotherDeviceMarksTheMessageAndLeavesTheOthers() async throws {
        let key = "65f0c0ffee0000000000c0e5"
        let other = "65f0c0ffee0000000000c0e6"
        _ = try await client.receive(payload: ListenerTests.dataComponent(key: key, dist: "Alert"))
        _ = try await client.receive(payload: ListenerTests.dataComponent(key: other, dist: "Alert"))
        // The hub's background notice: the person answered on their other phone.
        let received = try await client.receive(payload: ["msi_key": key, "acknowledged": "1"])
        guard case .acknowledged(let message) = try #require(received) else {
            Issue.record("an acknowledgement elsewhere must say so, got \(String(describing: received))")
            return
        }
        #expect(message.msiKey == key && message.acknowledged)
        let stored = try await client.store.messages()
        #expect(stored.first { $0.msiKey == key }?.acknowledged == true)
        #expect(stored.first { $0.msiKey == other }?.acknowledged == false)
        // A notice of a message this device never stored changes nothing, and is not taken for a message.
        #expect(try await client.receive(payload: ["msi_key": "65f0c0ffee0000000000c0e7", "acknowledged": "1"]) == nil)
        #expect(try await client.store.messages().count == 2)
        // Acknowledging on this device marks it too.
        try? await client.acknowledge(msiKey: other)
        #expect(try await client.store.messages().first { $0.msiKey == other }?.acknowledged == true)
    }
}

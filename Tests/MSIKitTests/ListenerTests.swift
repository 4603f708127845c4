import Foundation
import MSIKit
import Testing

/// The listener through the client, with a hub address where nothing listens: a payload that needs the hub fails
/// with `.network`, so every test that passes proves that its payload was handled without the network.
@Suite("Listener: FCM payloads stored once")
struct ListenerTests {
    let client: MSIClient

    init() throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        client = try MSIClient(configuration: configuration, push: SilentPush())
    }

    static func dataComponent(key: String, dist: String, title: String = "Closed", desc: String = "Snow") -> [String:
        String]
    {
        [
            "msi_key": key, "topic_key": CubeTests.openingHours, "dist": dist, "title": title, "desc": desc,
            "message": "The library is closed today.", "timestamp": "1773151200000",
        ]
    }

    @Test func anAlertsFirstArrivalIsShownAndStored() async throws {
        let key = "65f0c0ffee0000000000a1e7"
        let received = try await client.receive(payload: Self.dataComponent(key: key, dist: "Alert"))
        guard case .alert(let title, let body, let message) = try #require(received) else {
            Issue.record("an Alert must be shown, got \(String(describing: received))")
            return
        }
        #expect(title == "Closed" && body == "Snow")
        #expect(message.text == "The library is closed today." && message.timestamp == 1_773_151_200_000)
        #expect(try await client.store.messages() == [message])
    }

    @Test func anAlertsSecondComponentIsADuplicate() async throws {
        let key = "65f0c0ffee0000000000a1e8"
        #expect(try await client.receive(payload: Self.dataComponent(key: key, dist: "Alert")) != nil)
        // The notification component carries only msi_key; stored already, so no request is made.
        #expect(try await client.receive(payload: ["msi_key": key]) == nil)
        #expect(try await client.receive(payload: Self.dataComponent(key: key, dist: "Alert")) == nil)
        #expect(try await client.store.messages().count == 1)
    }

    @Test func informationIsStoredAndNotShown() async throws {
        let key = "65f0c0ffee0000000000b0b0"
        let received = try await client.receive(payload: Self.dataComponent(key: key, dist: "Information", desc: ""))
        guard case .information(let message) = try #require(received) else {
            Issue.record("Information must not be shown, got \(String(describing: received))")
            return
        }
        #expect(message.distribution == .information && message.msiKey == key)
        #expect(try await client.store.exists(msiKey: key))
        #expect(try await client.receive(payload: Self.dataComponent(key: key, dist: "Information")) == nil)
    }

    @Test func aTruncatedPayloadIsReadFromTheHubNotStoredAsItCame() async throws {
        var payload = Self.dataComponent(key: "65f0c0ffee0000000000c0c0", dist: "Alert")
        payload["truncated"] = "true"
        await #expect { try await client.receive(payload: payload) } throws: { error in
            (error as? MSIKitError)?.code == .network
        }
        #expect(try await client.store.messages().isEmpty)
    }

    @Test(arguments: [
        [:],
        ["msi_key": "not-an-object-id"],
        ["msi_key": "../../device/65f0c0ffee0000000000c0c0"],
        dataComponent(key: "65f0c0ffee0000000000c0c0", dist: "Alert").merging(["timestamp": "yesterday"]) { $1 },
    ])
    func malformedPayloadsAreRefused(payload: [String: String]) async throws {
        await #expect { try await client.receive(payload: payload) } throws: { error in
            (error as? MSIKitError)?.code == .invalidPayload
        }
        #expect(try await client.store.messages().isEmpty)
    }
}

@Suite("Client before registration")
struct UnregisteredClientTests {
    @Test func deviceRoutesNeedARegistration() async throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        let client = try MSIClient(configuration: configuration, push: SilentPush())
        #expect(try await client.registrationState() == .notRegistered)
        await #expect { try await client.catchUp() } throws: { ($0 as? MSIKitError)?.code == .notRegistered }
        await #expect { try await client.subscriptions() } throws: { ($0 as? MSIKitError)?.code == .notRegistered }
        await #expect { try await client.unsubscribe(CubeTests.results) } throws: {
            ($0 as? MSIKitError)?.code == .notRegistered
        }
    }

    @Test func startWithoutTheHubClearsOldMessagesThenFailsWithNetwork() async throws {
        let configuration = MSIClient.Configuration(
            hub: URL(string: "http://127.0.0.1:9")!, directory: nil, clock: { instant("2026-03-10T14:00:00Z") })
        let client = try MSIClient(configuration: configuration, push: SilentPush())
        try await client.store.add(message(1, at: milliseconds("2026-01-01T00:00:00Z")))
        await #expect { try await client.start() } throws: { ($0 as? MSIKitError)?.code == .network }
        #expect(try await client.store.messages().isEmpty)
        #expect(try await client.registrationState() == .notRegistered)
    }
}

import FakeFCM
import Foundation
import HubModel
import Testing

@testable import Curl
@testable import FCM

@Suite("Multiplexing HTTP client on libcurl's multi interface, against the fake FCM")
struct CurlMultiClientTests {
    /// A valid messages:send body for a topic.
    private static let sendBody = Array(#"{"message": {"topic": "news", "data": {"k": "v"}}}"#.utf8)

    /// `count` messages:send requests at once through `client` with a token the fake issued; their responses.
    private static func sendConcurrently(
        _ count: Int, through client: CurlMultiClient, harness: FCMHarness
    ) async throws -> [CurlResponse] {
        let token = try await harness.tokenProvider().accessToken()
        let url = harness.fake.baseURL + "/v1/projects/msi-test/messages:send"
        let headers = [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("Content-Type", "application/json")]
        return try await withThrowingTaskGroup(of: CurlResponse.self) { group in
            for _ in 0..<count {
                group.addTask { try await client.post(url: url, headers: headers, body: sendBody) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// `count` sends at once through a new client to a fake answering after `latency`, each answered 200 and
    /// accepted: the HTTP versions they went over, and the connections the client opened.
    private static func burst(
        _ count: Int, http2PriorKnowledge: Bool, latency: Duration, harness: FCMHarness
    ) async throws -> (versions: Set<String>, connections: Int) {
        harness.fake.setResponseDelay(latency)
        let client = CurlMultiClient(configuration: .init(http2PriorKnowledge: http2PriorKnowledge))
        // The token exchange goes over the pooled client's own HTTP/1.1 connection: count from after it.
        _ = try await harness.tokenProvider().accessToken()
        let before = harness.fake.connectionsOpened
        let responses = try await sendConcurrently(count, through: client, harness: harness)
        #expect(responses.count == count && responses.allSatisfy { $0.status == 200 })
        #expect(harness.fake.received.count == count)
        #expect(client.transfersInProgress == 0)
        await client.shutdown()
        return (Set(responses.map(\.httpVersion)), harness.fake.connectionsOpened - before)
    }

    @Test func threeHundredSendsOverH2cShareAFewConnectionsWithHundredsInFlight() async throws {
        try await FCMHarness.with { harness in
            // A latency long enough that the sends overlap however slowly the machine (or a sanitizer) starts them.
            let (versions, connections) = try await Self.burst(
                300, http2PriorKnowledge: true, latency: .milliseconds(500), harness: harness)
            #expect(versions == ["HTTP/2"] && harness.fake.sendsOverHTTP2 == 300)
            // Hundreds of streams at once on a few connections.
            #expect(harness.fake.mostSendsInFlight >= 100)
            #expect(connections <= 4)
        }
    }

    @Test func overHTTP1ItStillSendsEverythingOnAtMostFourConnections() async throws {
        try await FCMHarness.with { harness in
            let (versions, connections) = try await Self.burst(
                40, http2PriorKnowledge: false, latency: .milliseconds(20), harness: harness)
            #expect(versions == ["HTTP/1.1"] && harness.fake.sendsOverHTTP2 == 0)
            // One request a connection at a time.
            #expect(harness.fake.mostSendsInFlight <= connections && connections <= 4)
        }
    }

    @Test func cancellingARequestUnderWayStopsItsTransferAndResumesOnceWithCancelled() async throws {
        try await FCMHarness.with { harness in
            harness.fake.setResponseDelay(.seconds(5))
            let client = CurlMultiClient(configuration: .init(http2PriorKnowledge: true))
            let task = Task { try await Self.sendConcurrently(1, through: client, harness: harness) }
            try await waitUntil { harness.fake.sendsInFlight == 1 }
            #expect(client.transfersInProgress == 1)
            task.cancel()
            let error = await #expect(throws: CurlError.self) { try await task.value }
            #expect(error?.code == .cancelled)
            #expect(client.transfersInProgress == 0)
            // The client goes on serving after a cancellation.
            harness.fake.setResponseDelay(nil)
            let after = try await client.post(url: harness.fake.baseURL + "/echo", body: Array("again".utf8))
            #expect(after.body == Array("again".utf8))
            await client.shutdown()
        }
    }

    @Test func aCallerWaitingForAPlaceInFlightCanBeCancelled() async throws {
        try await FakeFCM.with { fake in
            let client = CurlMultiClient(configuration: .init(maxRequestsInFlight: 1, http2PriorKnowledge: true))
            let url = fake.baseURL + "/echo?delay_ms=3000"
            let first = Task { try await client.post(url: url, body: Array("first".utf8)) }
            try await waitUntil { client.transfersInProgress == 1 }
            let second = Task { try await client.post(url: url, body: Array("second".utf8)) }
            second.cancel()
            let error = await #expect(throws: CurlError.self) { try await second.value }
            #expect(error?.code == .cancelled)
            // The first was never disturbed, and its place goes to the next caller.
            #expect(try await first.value.body == Array("first".utf8))
            let third = try await client.post(url: fake.baseURL + "/echo", body: Array("third".utf8))
            #expect(third.body == Array("third".utf8))
            #expect(client.transfersInProgress == 0)
            await client.shutdown()
        }
    }

    @Test func aClosedPortFailsEveryWaitingRequestWithConnectFailed() async throws {
        let stopped = try await FakeFCM.start()
        let url = stopped.baseURL + "/echo"
        await stopped.stop()
        let client = CurlMultiClient(configuration: .init(http2PriorKnowledge: true))
        let outcomes = await withTaskGroup(of: CurlError.Code?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        _ = try await client.post(url: url, body: Array("x".utf8))
                        return nil
                    } catch let error as CurlError {
                        return error.code
                    } catch {
                        return .other
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes == Array(repeating: .connectFailed, count: 20))
        #expect(client.transfersInProgress == 0)
        await client.shutdown()
    }

    @Test func afterShutdownARequestIsRefused() async throws {
        try await FakeFCM.with { fake in
            let client = CurlMultiClient()
            _ = try await client.post(url: fake.baseURL + "/echo", body: Array("x".utf8))
            await client.shutdown()
            let error = await #expect(throws: CurlError.self) {
                try await client.post(url: fake.baseURL + "/echo", body: Array("y".utf8))
            }
            #expect(error?.code == .shutDown)
        }
    }

    @Test func fcmClientSendsOverH2cWithFCMHTTP2PriorKnowledge() async throws {
        try await FCMHarness.with { harness in
            let environment = [
                "GOOGLE_APPLICATION_CREDENTIALS": harness.testAccount.path,
                "FCM_ENDPOINT": harness.fake.baseURL,
                "FCM_HTTP2_PRIOR_KNOWLEDGE": "true",
            ]
            let client = try FCMClient.fromEnvironment(environment, httpClient: harness.http)
            #expect(client.configuration.http2PriorKnowledge)
            let request = try #require(client.requests(for: .sample(.information)).first)
            let name = try await client.send(request)
            #expect(name.hasPrefix("projects/msi-test/messages/"))
            #expect(harness.fake.received.count == 1)
            #expect(harness.fake.sendsOverHTTP2 == 1)
            await client.shutdown()
        }
    }

    @Test func fcmHTTP2PriorKnowledgeIsTrueOrFalse() async throws {
        try await withHTTPClient { http in
            #expect(throws: RelayConfigurationError.self) {
                try FCMClient.fromEnvironment(["FCM_HTTP2_PRIOR_KNOWLEDGE": "sometimes"], httpClient: http)
            }
            let plain = try FCMClient.fromEnvironment([:], httpClient: http)
            #expect(!plain.configuration.http2PriorKnowledge)
        }
    }
}

/// Waits, asking every 20 ms, until `condition` holds; fails after 10 s (a state that never comes, not a timing).
private func waitUntil(_ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("the condition never held", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

import DAO
import FakeFCM
import Foundation
import HTTPTypes
import HubServer
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Metrics and request ids")
struct MetricsTests {
    /// The value of the sample `name{labels}` in a Prometheus text exposition, or nil when absent.
    /// Every label given must match; others are ignored.
    static func sample(_ text: String, _ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name) && !line.hasPrefix("#") {
            let rest = line.dropFirst(name.count)
            guard rest.first == "{" || rest.first == " " else { continue }
            let matches = labels.allSatisfy { rest.contains("\($0.key)=\"\($0.value)\"") }
            if matches, let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        return nil
    }

    @Test func metricsAreExposedAndCount() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            _ = try await hub.request(.get, "/channel")
            let first = try await hub.request(.get, "/metrics")
            #expect(first.status == .ok)
            #expect(first.headers[.contentType]?.hasPrefix("text/plain") == true)
            let before = first.text
            for name in ["msi_mongo_pool_size", "msi_mongo_pool_in_use", "msi_mongo_pool_waiting", "msi_outbox_depth",
                         "msi_outbox_oldest_pending_age_seconds", "msi_cube_version", "msi_cube_loads", "msi_cube_bytes"] {
                #expect(Self.sample(before, name) != nil, "\(name)")
            }
            #expect((Self.sample(before, "msi_cube_bytes") ?? 0) > 1_000)
            // Once the follower runs, it confirms the copies several times a second.
            for name in ["msi_cube_confirmed_age_seconds", "msi_tokens_confirmed_age_seconds"] {
                var age: Double?
                for _ in 0..<30 where age == nil {
                    age = Self.sample(try await hub.request(.get, "/metrics").text, name)
                    if age == nil { try await Task.sleep(for: .milliseconds(100)) }
                }
                let seconds = try #require(age, "\(name)")
                #expect(seconds >= 0 && seconds < 3, "\(name)")
            }
            let route: [String: String] = [
                "http_route": "/channel", "http_request_method": "GET", "http_response_status_code": "200",
            ]
            let requestsBefore = try #require(Self.sample(before, "hb_requests", route))
            #expect(Self.sample(before, "http_server_request_duration_count", route) != nil)

            for _ in 0..<3 { _ = try await hub.request(.get, "/channel") }
            _ = try await hub.request(.post, "/message", as: .communicator, json: MessageRoutesTests.body(topic: "no-such-topic"))
            let after = try await hub.request(.get, "/metrics").text
            #expect((Self.sample(after, "hb_requests", route) ?? 0) >= requestsBefore + 3)
            #expect(Self.sample(after, "hb_requests", ["http_route": "/message", "http_response_status_code": "404"]) != nil)
        }
    }

    @Test func relayCountsAndTheOutboxBacklogAreMeasured() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: HubHarness.legacy, relay: try RelayOutboxTests.relay(to: fake)) { hub in
                try await hub.waitForRelayRecord()
                let before = try await hub.request(.get, "/metrics").text
                let sent = Self.sample(before, "msi_relay_sent_total", ["component": "data"]) ?? 0
                let key = try await hub.post(RelayOutboxTests.alert())
                try await eventually { try await hub.relayState(key) == "sent" }
                let after = try await hub.request(.get, "/metrics").text
                #expect((Self.sample(after, "msi_relay_sent_total", ["component": "data"]) ?? 0) >= sent + 1)
                #expect((Self.sample(after, "msi_relay_sent_total", ["component": "notification"]) ?? 0) >= 1)
                // Stored by this process, so handed to its relay in memory: no claim, and no write of its own (the
                // worker's progress record says it is sent).
                #expect((Self.sample(after, "msi_outbox_direct_messages_total") ?? 0) >= 1)
                #expect((Self.sample(after, "msi_outbox_progress_writes_total") ?? 0) >= 1)
                let stored = try await hub.database.collection(CollectionName.message).findOne(["msi_key": .objectID(key)])
                #expect(stored?[path: "relay.state"] == "direct")
                #expect((Self.sample(after, "msi_fcm_token_exchanges_total") ?? 0) >= 1)
                #expect(Self.sample(after, "msi_outbox_depth") == 0)
            }
        }
    }

    @Test func everyResponseCarriesARequestID() async throws {
        try await HubHarness.with { hub in
            let header = HTTPField.Name("X-Request-ID")!
            let plain = try await hub.client.execute(uri: "/healthz", method: .get)
            let generated = try #require(plain.headers[header])
            #expect(!generated.isEmpty)
            let other = try await hub.client.execute(uri: "/healthz", method: .get)
            #expect(other.headers[header] != generated)

            let given = try await hub.client.execute(uri: "/message/nope", method: .get, headers: [header: "trace-42.a_b"])
            #expect(given.status == .badRequest)
            #expect(given.headers[header] == "trace-42.a_b")
            let refused = try await hub.client.execute(uri: "/healthz", method: .get, headers: [header: "bad id\u{7f}"])
            #expect(refused.headers[header] != "bad id\u{7f}")
        }
    }
}

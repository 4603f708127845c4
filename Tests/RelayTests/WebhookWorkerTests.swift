import Curl
import DAO
import Foundation
import HubModel
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// The webhook worker one claim at a time (`step`) on a fake clock, against the test database: attempts refused by
/// its address rule (`WebhookTargetResolving`: no HTTP at all) fail, wait for the backoff, and are given up on past
/// `retryFor`; one test needs a real answer (2xx) and posts to a local endpoint.
@Suite("The webhook worker on a fake clock")
struct WebhookWorkerTests {
    /// Refuses every URL, as the hub's rule refuses a private address: each attempt fails before any connection.
    struct Refusing: WebhookTargetResolving {
        func pinnedAddress(for url: String) async throws(WebhookTargetRefused) -> CurlPinnedAddress {
            throw WebhookTargetRefused(code: "address_refused", message: "refused by the test")
        }
    }

    /// Sends every URL to 127.0.0.1 and `port`.
    struct Loopback: WebhookTargetResolving {
        let port: Int
        func pinnedAddress(for url: String) async throws(WebhookTargetRefused) -> CurlPinnedAddress {
            CurlPinnedAddress(host: "hooks.school.test", port: port, address: "127.0.0.1")
        }
    }

    /// A webhook worker on `database` and `clock`, attempting through `resolver`, and one `message.sent` event emitted
    /// now to a webhook subscribed to it.
    struct Scenario {
        let clock = FakeClock()
        let subscribers = WebhookSubscribers()
        let worker: WebhookWorker
        let deliveries: WebhookDeliveryDAO
        let webhook: Webhook
        let http = CurlClient(configuration: CurlClient.Configuration(threads: 1, requestTimeout: .seconds(10)))

        init(
            _ database: MongoDatabase, resolver: any WebhookTargetResolving,
            url: String = "http://hooks.school.test/hook",
            retryFor: Duration = .seconds(24 * 3_600)
        ) async throws {
            var configuration = WebhookWorker.Configuration()
            // Every wait between 5 and 10 s (the backoff's upper half), whatever the attempt.
            configuration.retry = RetryPolicy(base: .seconds(10), cap: .seconds(10), quotaPause: nil)
            configuration.retryFor = retryFor
            worker = WebhookWorker(
                database: database, subscribers: subscribers, resolver: resolver, configuration: configuration,
                logger: RelayFixture.quietLogger, now: clock.unix)
            deliveries = WebhookDeliveryDAO(database: database)
            webhook = Webhook(
                id: ObjectID(), url: url, events: [WebhookEvent.messageSent.rawValue],
                secret: "whsec_" + Data((0..<24).map { UInt8($0) }).base64EncodedString(), createdAt: clock.now)
            try await WebhookDAO(database: database, subscribers: subscribers).insert(webhook)
            try await WebhookEventDAO(database: database, subscribers: subscribers, now: clock.unix).emit(
                .messageSent, payload: ["msi_key": "66a0c0ffee00000000000001", "title": "Snow day"])
        }

        /// The webhook's one delivery as stored now.
        func delivery() async throws -> WebhookDelivery {
            let list = try await deliveries.list(webhook: webhook.id, before: nil, limit: 10)
            #expect(list.count == 1)
            return try #require(list.first)
        }
    }

    @Test func aFailedAttemptIsDueAgainAfterItsBackoffAndNotBefore() async throws {
        try await TestDatabase.with { database in
            let scenario = try await Scenario(database, resolver: Refusing())
            let start = scenario.clock.now
            #expect(try await scenario.worker.step(http: scenario.http))
            let failed = try await scenario.delivery()
            #expect(failed.state == .pending && failed.attempts == 1 && failed.lastError == "address_refused")
            let due = try #require(failed.dueAt)
            #expect((start + 5_000...start + 10_000).contains(due), "due \(due - start) ms after")

            scenario.clock.advance(to: due - 1)
            #expect(try await !scenario.worker.step(http: scenario.http))
            #expect(try await scenario.delivery().attempts == 1)

            scenario.clock.advance(to: due)
            #expect(try await scenario.worker.step(http: scenario.http))
            let again = try await scenario.delivery()
            #expect(again.state == .pending && again.attempts == 2)
            #expect(try #require(again.dueAt) >= due + 5_000)
            try await scenario.http.shutdown()
        }
    }

    @Test func anAttemptThatFailsWhenTheNextWouldComePastRetryForIsTheLast() async throws {
        try await TestDatabase.with { database in
            let scenario = try await Scenario(database, resolver: Refusing(), retryFor: .seconds(60))
            let windowEnd = scenario.clock.now + 60_000
            var attempts: Int64 = 0
            while true {
                #expect(try await scenario.worker.step(http: scenario.http))
                attempts += 1
                let delivery = try await scenario.delivery()
                #expect(delivery.attempts == attempts)
                guard delivery.state == .pending, let due = delivery.dueAt else { break }
                #expect(due <= windowEnd, "a retry is never planned past the window")
                scenario.clock.advance(to: due)
            }
            let failed = try await scenario.delivery()
            #expect(failed.state == .failed && failed.lastError == "address_refused")
            #expect(failed.failedAt == scenario.clock.now)
            // Given up only once a wait (10 s at most) from this attempt could pass the window.
            #expect(scenario.clock.now > windowEnd - 10_000)
            #expect((6...13).contains(attempts), "\(attempts) attempts 5-10 s apart in a minute")

            scenario.clock.advance(by: .seconds(3_600))
            #expect(try await !scenario.worker.step(http: scenario.http), "a failed delivery is never due again")
            try await scenario.http.shutdown()
        }
    }

    @Test func aDeliveryAnswered2xxIsRecordedDeliveredWithItsSignedHeaders() async throws {
        try await TestDatabase.with { database in
            let endpoint = try LocalEndpoint(status: 204)
            defer { endpoint.stop() }
            let scenario = try await Scenario(
                database, resolver: Loopback(port: endpoint.port), url: "http://hooks.school.test:\(endpoint.port)/hook"
            )
            #expect(try await scenario.worker.step(http: scenario.http))
            let delivered = try await scenario.delivery()
            #expect(delivered.state == .delivered && delivered.lastStatus == 204)
            #expect(delivered.deliveredAt == scenario.clock.now)

            let request = try #require(endpoint.received.first)
            #expect(endpoint.received.count == 1)
            #expect(request.head.hasPrefix("POST /hook "))
            #expect(request.header("webhook-id") == delivered.messageID)
            #expect(request.header("webhook-timestamp") == "\(scenario.clock.now / 1000)")
            #expect(request.header("webhook-signature")?.hasPrefix("v1,") == true)
            #expect(String(decoding: request.body, as: UTF8.self) == delivered.body)

            scenario.clock.advance(by: .seconds(3_600))
            #expect(try await !scenario.worker.step(http: scenario.http), "delivered once")
            try await scenario.http.shutdown()
        }
    }
}

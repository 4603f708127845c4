import DAO
import FakeFCM
import Foundation
import HTTPTypes
import HubCore
import HubServer
import HummingbirdTesting
import Mongo
import MongoTestSupport
import NIOCore
import Synchronization
import Testing

@Suite("Metrics and request ids", .tags(.faults))
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
            for name in [
                "msi_mongo_pool_size", "msi_mongo_pool_in_use", "msi_mongo_pool_waiting", "msi_outbox_depth",
                "msi_outbox_oldest_pending_age_seconds", "msi_cube_version", "msi_cube_loads", "msi_cube_bytes",
            ] {
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
            _ = try await hub.request(
                .post, "/message", as: .communicator, json: MessageRoutesTests.body(topic: "no-such-topic"))
            let after = try await hub.request(.get, "/metrics").text
            #expect((Self.sample(after, "hb_requests", route) ?? 0) >= requestsBefore + 3)
            #expect(
                Self.sample(after, "hb_requests", ["http_route": "/message", "http_response_status_code": "404"]) != nil
            )
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
                let stored = try await hub.database.collection(CollectionName.message).findOne([
                    "msi_key": .objectID(key)
                ])
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

            let given = try await hub.client.execute(
                uri: "/message/nope", method: .get, headers: [header: "trace-42.a_b"])
            #expect(given.status == .badRequest)
            #expect(given.headers[header] == "trace-42.a_b")
            let refused = try await hub.client.execute(uri: "/healthz", method: .get, headers: [header: "bad id\u{7f}"])
            #expect(refused.headers[header] != "bad id\u{7f}")
        }
    }

    // MARK: The database's figures, read at most every 15 s

    /// A Unix-ms clock the test moves by hand.
    final class ManualClock: Sendable {
        private let time = Mutex<Int64>(1_700_000_000_000)
        func now() -> Int64 { time.withLock { $0 } }
        func advance(seconds: Int64) { time.withLock { $0 += seconds * 1000 } }
    }

    /// Stores an active device as a registration would, straight into the collection.
    static func addDevice(_ platform: Platform, to database: MongoDatabase) async throws {
        try await database.collection(CollectionName.devices).insertOne([
            "_id": .objectID(ObjectID()), "registration": .string("reg-\(ObjectID().hex)"),
            "platform": .string(platform.rawValue), "state": "active", "secret_hash": "x",
        ])
    }

    @Test func concurrentScrapesShareOneReadingAndANewOneComesOnlyAfterFifteenSeconds() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: database)
            let clock = ManualClock()
            let gauges = DatabaseGauges(services: services, now: clock.now)
            try await Self.addDevice(.android, to: database)

            let readings = try await withThrowingTaskGroup(of: DatabaseGauges.Reading?.self) { group in
                for _ in 0..<20 { group.addTask { await gauges.current() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(readings.count == 20)
            #expect(await gauges.readings == 1)
            let first = try #require(readings.first ?? nil)
            #expect(readings.allSatisfy { $0 == first })
            #expect(first.devicesByPlatform[.android] == 1 && first.devicesByPlatform[.ios] == 0)

            // Within the interval a scrape costs the database nothing, and shows the reading it has.
            try await Self.addDevice(.android, to: database)
            clock.advance(seconds: 14)
            #expect(await gauges.current() == first)
            #expect(await gauges.readings == 1)

            clock.advance(seconds: 2)
            let second = try #require(await gauges.current())
            #expect(await gauges.readings == 2)
            #expect(second.devicesByPlatform[.android] == 2)
            #expect(second.readAt == clock.now())
        }
    }

    @Test func aScrapeWhileTheDatabaseIsDownAnswersWithTheLastReadingAndWaitsTheIntervalOut() async throws {
        let server = try await DatabaseServer()
        let pool = try MongoClientPool(
            configuration: MongoConfiguration(
                uri: server.uri, serverSelectionTimeoutMS: 500, connectTimeoutMS: 500, maxPoolSize: 2))
        let services = HubServices(pool: pool)
        let clock = ManualClock()
        let gauges = DatabaseGauges(services: services, now: clock.now)
        let first = try #require(await gauges.current())
        #expect(first.outboxDepth == 0)

        await server.kill()
        clock.advance(seconds: 16)
        #expect(await gauges.current() == first)
        #expect(await gauges.readings == 2)
        // The failed reading counts for the interval too: the next scrapes do not wait for the database again.
        clock.advance(seconds: 5)
        #expect(await gauges.current() == first)
        #expect(await gauges.readings == 2)
        await pool.close()
    }

    @Test func metricsTokenWhenSetIsRequiredAsABearerToken() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let token = "scrape-9f8e7d6c5b4a"
            let configuration = HubConfiguration(
                mongoURI: try TestDatabase.uri(), port: 0, databasePoolSize: 2,
                writeDeadline: .seconds(30), metricsToken: token)
            let app = try await buildApplication(configuration: configuration, databaseName: database.name)
            try await app.test(.live) { client in
                for headers: HTTPFields in [
                    [:], [.authorization: "Bearer wrong-token"], [.authorization: "Bearer \(token)x"],
                    [.authorization: "Basic \(Data("metrics:\(token)".utf8).base64EncodedString())"],
                ] {
                    let refused = try await client.execute(uri: "/metrics", method: .get, headers: headers)
                    #expect(refused.status == .unauthorized)
                    #expect(refused.errorCode == "unauthenticated")
                    #expect(refused.headers[.wwwAuthenticate] != nil)
                    #expect(!refused.text.contains("msi_outbox_depth"))
                }
                let scraped = try await client.execute(
                    uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(token)"])
                #expect(scraped.status == .ok)
                #expect(Self.sample(scraped.text, "msi_outbox_depth") != nil)
                #expect(Self.sample(scraped.text, "msi_database_gauges_age_seconds") != nil)
                // 20 scrapes at once are all answered, from one reading.
                try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            try await client.execute(
                                uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(token)"]
                            ).status
                        }
                    }
                    for try await status in group { #expect(status == .ok) }
                }
                // The token is no API token: the routes that need a caller still refuse it.
                let write = try await client.execute(
                    uri: "/channel", method: .post,
                    headers: [
                        .authorization: "Bearer \(token)", .contentType: "application/json",
                    ], body: ByteBuffer(string: #"{"name": "x", "desc": ""}"#))
                #expect(write.status == .unauthorized)
            }
        }
    }

    @Test func metricsTokenIsReadFromTheEnvironment() throws {
        #expect(try HubConfiguration.fromEnvironment([:]).metricsToken == nil)
        #expect(try HubConfiguration.fromEnvironment(["METRICS_TOKEN": ""]).metricsToken == nil)
        #expect(
            try HubConfiguration.fromEnvironment(["METRICS_TOKEN": "s3cret-scrape"]).metricsToken == "s3cret-scrape")
        for bad in [
            "msi_looks-like-an-api-token", "msd_looks-like-a-device", "has space", String(repeating: "t", count: 257),
        ] {
            #expect(throws: ConfigurationError.self) { try HubConfiguration.fromEnvironment(["METRICS_TOKEN": bad]) }
        }
    }
}

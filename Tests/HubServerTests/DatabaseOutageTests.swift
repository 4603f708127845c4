import DAO
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("The database going away and coming back", .tags(.faults))
struct DatabaseOutageTests {
    @Test func writesGet503QuicklyReadsOfTheCubeNeverWaitAndTheHubRecoversByItself() async throws {
        let (server, app) = try await Self.startHub()
        try await app.test(.live) { client in
            let before = try await client.execute(uri: "/channel", method: .get)
            #expect(before.status == .ok)

            await server.kill()
            let clock = ContinuousClock()
            for uri in ["/readyz", "/message"] {
                // Each route on its own: a read's server selection (and its one retry) may take seconds.
                let asked = clock.now
                var response = try await client.execute(uri: uri, method: .get)
                while response.status == .ok, clock.now - asked < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(100))
                    response = try await client.execute(uri: uri, method: .get)
                }
                #expect(response.status == .serviceUnavailable, "\(uri)")
                #expect(response.headers[.retryAfter] != nil)
                #expect(clock.now - asked < .seconds(5), "\(uri)")
            }
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            try await Self.expectServedFromMemory(client, same: before)

            try await server.start()
            var ready = false
            for _ in 0..<40 where !ready {
                ready = try await client.execute(uri: "/readyz", method: .get).status == .ok
                if !ready { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(ready)
            // A change made in the database is seen within a second once it answers again.
            try await Self.addChannel("Back again", at: server)
            let written = clock.now
            var seen = false
            while !seen, clock.now - written < .seconds(3) {
                seen = try await client.execute(uri: "/channel", method: .get).body.readableBytesView
                    .elementsEqual(before.body.readableBytesView) == false
                if !seen { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(seen)
            #expect(clock.now - written < .seconds(1))
        }
        await server.kill()
    }

    @Test func aHungDatabaseLeavesTheCubeServedFromMemoryWithItsAge() async throws {
        let (server, app) = try await Self.startHub()
        try await app.test(.live) { client in
            let before = try await client.execute(uri: "/channel", method: .get)
            #expect(before.status == .ok)
            server.pause()
            defer { server.resume() }
            try await Self.expectServedFromMemory(client, same: before)
            let channelID = try #require(before.body.getString(at: before.body.readerIndex, length: before.body.readableBytes)?
                .firstMatch(of: /"_id":"([0-9a-f]{24})"/)?.1)
            let one = try await client.execute(uri: "/channel/\(channelID)", method: .get)
            #expect(one.status == .ok)
            #expect(one.headers[.age] != nil)
        }
        await server.kill()
    }

    /// A private database holding one channel, and a hub on it that gives up on the database after a second.
    static func startHub() async throws -> (DatabaseServer, some ApplicationProtocol) {
        let server = try await DatabaseServer()
        try await addChannel("Library", at: server)
        let configuration = HubConfiguration(mongoURI: server.uri, port: 0, databasePoolSize: 2,
                                             serverSelectionTimeoutMS: 1_000)
        return (server, try await buildApplication(configuration: configuration))
    }

    /// Adds a channel as another process would.
    static func addChannel(_ name: String, at server: DatabaseServer) async throws {
        let pool = try MongoClientPool(configuration: MongoConfiguration(uri: server.uri))
        _ = try await ChannelDAO(database: pool.database()).add(ChannelDraft(name: name, desc: ""))
        await pool.close()
    }

    /// GET /channel, once the copy has gone unconfirmed for over a second, still answers at once from memory,
    /// the same bytes, with its age; HEAD too.
    static func expectServedFromMemory(_ client: some TestClientProtocol, same before: TestResponse) async throws {
        try await Task.sleep(for: .milliseconds(1_500))
        let clock = ContinuousClock()
        for method in [HTTPRequest.Method.get, .head] {
            let asked = clock.now
            let response = try await client.execute(uri: "/channel", method: method)
            // Far below the database's one-second time-out: nothing waited for it.
            #expect(clock.now - asked < .milliseconds(500))
            #expect(response.status == .ok)
            #expect(response.headers[.eTag] == before.headers[.eTag])
            #expect((Int(response.headers[.age] ?? "") ?? 0) >= 1)
            if method == .get { #expect(response.body == before.body) }
        }
    }
}

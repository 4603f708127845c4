import DAO
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("The database going away and coming back", .tags(.faults))
struct DatabaseOutageTests {
    @Test func writesGet503ReadsOfTheCubeComeFromMemoryAndTheHubRecoversByItself() async throws {
        let (server, app) = try await Self.startHub()
        try await app.test(.live) { client in
            let before = try await client.execute(uri: "/channel", method: .get)
            #expect(before.status == .ok)

            await server.kill()
            for uri in ["/readyz", "/message"] {
                // Each route on its own: a read's server selection (and its one retry) may take seconds. The 503
                // comes while the database is still down: the hub gave up on it rather than waiting for its return.
                var response = try await client.execute(uri: uri, method: .get)
                try await eventually("\(uri) refused") {
                    if response.status == .ok { response = try await client.execute(uri: uri, method: .get) }
                    return response.status != .ok
                }
                #expect(response.status == .serviceUnavailable, "\(uri)")
                #expect(response.headers[.retryAfter] != nil)
            }
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            try await Self.expectServedFromMemory(client, same: before)

            try await server.start()
            try await eventually("the hub ready again") {
                try await client.execute(uri: "/readyz", method: .get).status == .ok
            }
            // Once the database answers again, the hub follows it again: a change made there is served (how soon
            // after: CubeCacheTests, with a process of its own).
            try await Self.addChannel("Back again", at: server)
            try await eventually("the change served") {
                try await client.execute(uri: "/channel", method: .get).body.readableBytesView
                    .elementsEqual(before.body.readableBytesView) == false
            }
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
            let channelID = try #require(
                before.body.getString(at: before.body.readerIndex, length: before.body.readableBytes)?
                    .firstMatch(of: /"_id":"([0-9a-f]{24})"/)?.1)
            let one = try await client.execute(uri: "/channel/\(channelID)", method: .get)
            #expect(one.status == .ok)
            #expect(one.headers[.age] != nil)

            // Nothing waits for the hung database: of two requests sent together on connections of their own, the
            // one that needs the database (readiness pings it) is answered after the one the cube answers.
            let port = try #require(client.port)
            let answers = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                group.addTask { ("/readyz", try await Self.status(of: "/readyz", port: port)) }
                group.addTask { ("/channel/:id", try await Self.status(of: "/channel/\(channelID)", port: port)) }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.map(\.0) == ["/channel/:id", "/readyz"])
            #expect(answers.map(\.1) == [200, 503])
        }
        await server.kill()
    }

    /// A private database holding one channel, and a hub on it that gives up on the database after a second.
    static func startHub() async throws -> (DatabaseServer, some ApplicationProtocol) {
        let server = try await DatabaseServer()
        try await addChannel("Library", at: server)
        let configuration = HubConfiguration(
            mongoURI: server.uri, port: 0, databasePoolSize: 2,
            serverSelectionTimeoutMS: 1_000)
        return (server, try await buildApplication(configuration: configuration))
    }

    /// The status of a GET of `path` from the hub on `port`, on a connection of its own (the test client sends
    /// one request at a time).
    static func status(of path: String, port: Int) async throws -> Int {
        let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// Adds a channel as another process would.
    static func addChannel(_ name: String, at server: DatabaseServer) async throws {
        let pool = try MongoClientPool(configuration: MongoConfiguration(uri: server.uri))
        _ = try await ChannelDAO(database: pool.database()).add(ChannelDraft(name: name, desc: ""))
        await pool.close()
    }

    /// GET /channel, once the copy has gone unconfirmed for over a second, still answers from memory, the same
    /// bytes, with its age; HEAD too.
    static func expectServedFromMemory(_ client: some TestClientProtocol, same before: TestResponse) async throws {
        // At least that long without a confirmation: a sleep as a lower bound, not a measure.
        try await Task.sleep(for: .milliseconds(1_500))
        for method in [HTTPRequest.Method.get, .head] {
            let response = try await client.execute(uri: "/channel", method: method)
            #expect(response.status == .ok)
            #expect(response.headers[.eTag] == before.headers[.eTag])
            #expect((Int(response.headers[.age] ?? "") ?? 0) >= 1)
            if method == .get { #expect(response.body == before.body) }
        }
    }
}

import DAO
import Hummingbird
import HummingbirdTesting
@testable import HubServer
import Mongo
import MongoTestSupport
import Testing

@Suite("The database going away and coming back")
struct DatabaseOutageTests {
    @Test func requestsGet503QuicklyAndTheHubRecoversByItself() async throws {
        let server = try await DatabaseServer()
        let configuration = HubConfiguration(mongoURI: server.uri, port: 0, databasePoolSize: 2,
                                             serverSelectionTimeoutMS: 1_000)
        let app = try await buildApplication(configuration: configuration)
        try await app.test(.live) { client in
            #expect(try await client.execute(uri: "/channel", method: .get).status == .ok)

            await server.kill()
            let clock = ContinuousClock()
            let killed = clock.now
            // GET /channel is served from memory only while the database confirms it current.
            for uri in ["/channel", "/readyz", "/message"] {
                var response = try await client.execute(uri: uri, method: .get)
                while response.status == .ok, clock.now - killed < .seconds(5) {
                    try await Task.sleep(for: .milliseconds(100))
                    response = try await client.execute(uri: uri, method: .get)
                }
                #expect(response.status == .serviceUnavailable, "\(uri)")
                #expect(response.headers[.retryAfter] != nil)
                #expect(clock.now - killed < .seconds(5))
            }
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)

            try await server.start()
            var recovered = false
            for _ in 0..<40 where !recovered {
                recovered = try await client.execute(uri: "/channel", method: .get).status == .ok
                if !recovered { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(recovered)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
        }
        await server.kill()
    }
}

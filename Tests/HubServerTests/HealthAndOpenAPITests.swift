import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Health and the API description")
struct HealthAndOpenAPITests {
    @Test func healthAndReadiness() async throws {
        try await HubHarness.with { hub in
            let health = try await hub.request(.get, "/healthz").json()
            #expect(health == ["status": "ok"])
            let ready = try await hub.request(.get, "/readyz").json()
            #expect(ready["status"]?.stringValue == "ready")
            #expect(ready["messages"]?.stringValue == "accepted")
            #expect(ready["relay_backlog_seconds"]?.doubleValue == 0)
        }
    }

    @Test func everyRouteIsInTheOpenAPIDocumentAndNothingElse() async throws {
        let pool = try TestDatabase.sharedPool()
        let router = buildRouter(services: HubServices(pool: pool, database: pool.database("unused")))
        // Foundation's parser: the document's "$ref" keys are exactly what ours refuses from clients.
        let document = try #require(try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, item) in paths {
            for method in item.keys where method != "parameters" {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        let routed = Set(router.routes.map { route in
            let path = route.path.description.split(separator: "/").map { part in
                part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
            }.joined(separator: "/")
            return "\(route.method.rawValue) /\(path)"
        }.filter { !$0.hasSuffix(" /") && !$0.contains(" /portal") })  // the portal's HTML pages are not the API
        // The router answers HEAD for every GET route (`autoGenerateHeadEndpoints`), and the document says so.
        let withHead = routed.union(routed.filter { $0.hasPrefix("GET ") }.map { "HEAD " + $0.dropFirst(4) })
        #expect(withHead == documented)
        #expect(routed.count >= 17)
    }

    @Test func theDocumentIsServed() async throws {
        try await HubHarness.with { hub in
            let response = try await hub.request(.get, "/openapi.json")
            #expect(response.status == .ok)
            #expect(response.text.contains("\"/subject/{channelID}/{areaID}/{subjectID}\""))
        }
    }
}

@Suite struct ErrorCodeTests {
    @Test func everyErrorCodeIsListedInTheOpenAPIDocument() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let error = try #require(((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any])
        let code = try #require((error["properties"] as? [String: Any])?["code"] as? [String: Any])
        let listed = Set(try #require(code["enum"] as? [String]))
        let answered = Set(HubError.Code.allCases.map(\.description))
        #expect(answered.subtracting(listed).isEmpty, "not in openapi.json: \(answered.subtracting(listed))")
        #expect(listed.subtracting(answered).isEmpty, "listed but never answered: \(listed.subtracting(answered))")
    }
}

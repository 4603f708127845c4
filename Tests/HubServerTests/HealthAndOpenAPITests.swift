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
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, item) in paths {
            for method in item.keys where method != "parameters" {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        let routed = Set(
            router.routes.map { route in
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

    /// The document as Foundation reads it.
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
    }

    @Test func everyOperationDocumentsTheErrorsItsInputCanCause() throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        // Where a path names an id the hub parses, a malformed one is 400.
        let ids = ["{msiKey}", "{deviceID}", "{webhookID}", "{channelID}", "{areaID}", "{subjectID}"]
        // The routes that never read the database.
        let withoutDatabase: Set = ["/healthz", "/openapi.json", "/metrics"]
        var missing: [String] = []
        for (path, item) in paths {
            for (method, value) in item where !["head", "parameters"].contains(method) {
                let operation = try #require(value as? [String: Any])
                let documented = Set((operation["responses"] as? [String: Any] ?? [:]).keys)
                var needed: Set<String> = []
                // A JSON body: malformed (400), too large (413), not JSON (415), failing validation (422).
                if operation["requestBody"] != nil { needed.formUnion(["400", "413", "415", "422"]) }
                if !(operation["security"] as? [Any] ?? []).isEmpty { needed.insert("401") }
                if ids.contains(where: path.contains) { needed.insert("400") }
                if !withoutDatabase.contains(path) { needed.insert("503") }
                for status in needed.subtracting(documented).sorted() {
                    missing.append("\(method.uppercased()) \(path) \(status)")
                }
            }
        }
        #expect(missing.isEmpty, "undocumented answers: \(missing.sorted())")
    }

    /// A schema of `components.schemas`, by name.
    static func schema(_ name: String) throws -> [String: Any] {
        let components = try #require(try document()["components"] as? [String: Any])
        return try #require((components["schemas"] as? [String: Any])?[name] as? [String: Any])
    }

    @Test func postMessageAgreesWithItsSchemaAtAndBeyondEachLimit() async throws {
        let input = try Self.schema("MessageInput")
        let properties = try #require(input["properties"] as? [String: [String: Any]])
        let required = try #require(input["required"] as? [String])
        var limits: [String: Int] = [:]
        for field in ["title", "desc", "message"] {
            limits[field] = try #require(properties[field]?["maxLength"] as? Int)
        }
        let maxLength = limits
        let ttl = try #require(properties["ttl"]?["maximum"] as? Int)
        let distributions = try #require(properties["distribution"]?["enum"] as? [String])
        let pattern = try #require(properties["topic_key"]?["pattern"] as? String)
        let topic = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03"
        #expect(topic.range(of: pattern, options: .regularExpression) != nil)
        #expect(topic.uppercased().range(of: pattern, options: .regularExpression) == nil)
        #expect(!distributions.contains("Urgent"))
        // Field → JSON value (the test's texts need no escaping).
        let valid = [
            "title": #""Closed""#, "desc": #""Closed today""#, "message": #""The library is closed.""#,
            "topic_key": "\"\(topic)\"", "distribution": #""Alert""#,
        ]
        try await HubHarness.with(seed: { database in try await HubHarness.legacy(database) }) { hub in
            func status(_ body: [String: String], _ changes: [String: String?] = [:]) async throws -> Int {
                var body = body
                for (key, value) in changes { body[key] = value }
                let json =
                    "{"
                    + body.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }
                    .joined(separator: ", ") + "}"
                return try await hub.request(.post, "/message", as: .communicator, json: json).status.code
            }
            // Each required field missing is 422; each text at its maxLength is taken and one more is 422; the ttl
            // likewise; a distribution outside the enum is 422; a topic key outside the pattern names no subject.
            let absent: String? = nil
            var cases: [(label: String, changes: [String: String?], expected: Int)] = [("valid", [:], 201)]
            cases += required.map { ("without \($0)", [$0: absent], 422) }
            for (field, maximum) in maxLength.sorted(by: { $0.key < $1.key }) {
                cases.append(
                    ("\(field) of \(maximum)", [field: "\"" + String(repeating: "é", count: maximum) + "\""], 201))
                cases.append(
                    (
                        "\(field) of \(maximum + 1)",
                        [field: "\"" + String(repeating: "é", count: maximum + 1) + "\""], 422
                    ))
            }
            cases += [
                ("ttl \(ttl)", ["ttl": "\(ttl)"], 201), ("ttl \(ttl + 1)", ["ttl": "\(ttl + 1)"], 422),
                ("distribution Urgent", ["distribution": #""Urgent""#], 422),
                ("topic_key in capitals", ["topic_key": "\"\(topic.uppercased())\""], 404),
            ]
            for (label, changes, expected) in cases {
                let answered = try await status(valid, changes)
                #expect(answered == expected, "\(label)")
            }
        }
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
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let error = try #require(
            ((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any])
        let code = try #require((error["properties"] as? [String: Any])?["code"] as? [String: Any])
        let listed = Set(try #require(code["enum"] as? [String]))
        let answered = Set(HubError.Code.allCases.map(\.description))
        #expect(answered.subtracting(listed).isEmpty, "not in openapi.json: \(answered.subtracting(listed))")
        #expect(listed.subtracting(answered).isEmpty, "listed but never answered: \(listed.subtracting(answered))")
    }
}

import DAO
import Foundation
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("HTTP as RFC 9110 has it: HEAD, 405, short bodies, nosniff")
struct HTTPHygieneTests {
    /// Headers that differ from one answer to the next whatever the method.
    static let perRequest: Set<String> = ["date", "x-request-id", "set-cookie"]
    /// Headers one answer has and the next may not, whatever the method (`Age`: the cube copy's age, given while
    /// the database has not confirmed it lately).
    static let sometimes: Set<String> = ["age"]

    @Test func headOnEveryGETRouteOfTheAPIAndThePortalGivesGETsStatusAndHeadersWithoutABody() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            let posted = try await hub.request(.post, "/message", as: .communicator, json: MessageRoutesTests.body())
            let msiKey = try #require(try posted.json()["msi_key"]?.stringValue)
            // The message's relay state settles first (log mode), so GET and HEAD of it describe the same bytes.
            let key = try #require(ObjectID(hex: msiKey))
            try await eventually { try await hub.relayState(key) != "pending" }
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(try OpenAPIDocument.bytes())) as? [String: Any])
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let values = [
                "{channelID}": Legacy.channelID.hex, "{msiKey}": msiKey, "{deviceID}": ObjectID().hex,
                "{groupID}": "no-such-group", "{webhookID}": ObjectID().hex, "{personID}": "no-such-person",
                "{eventID}": ObjectID().hex,
            ]
            var uris: [String] = []
            for (path, item) in paths where item["get"] != nil {
                #expect(item["head"] != nil, "HEAD \(path) is not in openapi.json")
                // A person's export is streamed (chunked): its length is not known before it is written, so its HEAD
                // cannot give GET's Content-Length (RFC 9110 9.3.2 lets HEAD leave the content's fields out).
                guard path != "/person/{personID}/export" else { continue }
                uris.append(values.reduce(path) { $0.replacingOccurrences(of: $1.key, with: $1.value) })
            }
            #expect(uris.count >= 10)
            // The export's HEAD: the same status and type, no body, and no Content-Length that would be wrong.
            let exportGet = try await hub.client.execute(
                uri: "/person/no-such-person/export", method: .get, headers: HubHarness.Caller.admin.headers)
            let exportHead = try await hub.client.execute(
                uri: "/person/no-such-person/export", method: .head, headers: HubHarness.Caller.admin.headers)
            #expect(exportHead.status == .ok && exportHead.body.readableBytes == 0)
            #expect(exportHead.headers[.contentType] == exportGet.headers[.contentType])
            #expect(
                exportHead.headers[.contentLength] == nil
                    || exportHead.headers[.contentLength] == String(exportGet.body.readableBytes),
                "HEAD export Content-Length \(exportHead.headers[.contentLength] ?? "-") for \(exportGet.body.readableBytes)"
            )
            for uri in uris + ["/message?topic_key=\(Legacy.hoursTopic)", "/audience?topic_key=\(Legacy.hoursTopic)"] {
                try await Self.expectHeadMatchesGet(uri, headers: HubHarness.Caller.admin.headers, client: hub.client)
            }
            // The portal: pages before and after login, its static files, and `/`.
            var browser = PortalBrowser(hub: hub)
            for uri in ["/", "/portal", "/portal/login", "/portal/send", "/portal/static/portal.css"] {
                try await Self.expectHeadMatchesGet(uri, headers: [:], client: hub.client)
            }
            _ = try await browser.login("root", PortalTests.adminPassword)
            let cookie: HTTPFields = [.cookie: browser.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")]
            for uri in [
                "/portal", "/portal/send", "/portal/sent", "/portal/messages/\(msiKey)", "/portal/admin/channels",
                "/portal/admin/users", "/portal/admin/tokens", "/portal/no-such-page",
            ] {
                try await Self.expectHeadMatchesGet(uri, headers: cookie, client: hub.client)
            }
        }
    }

    /// GET and HEAD of `uri` answer the same status and headers (values too, but those that differ per request;
    /// `/metrics` grows between the two, so only its length's presence is compared), and HEAD has no body.
    static func expectHeadMatchesGet(_ uri: String, headers: HTTPFields, client: some TestClientProtocol) async throws {
        let get = try await client.execute(uri: uri, method: .get, headers: headers)
        let head = try await client.execute(uri: uri, method: .head, headers: headers)
        #expect(head.status == get.status, "HEAD \(uri)")
        #expect(head.body.readableBytes == 0, "HEAD \(uri) has a body")
        let varying = uri == "/metrics" ? perRequest.union(["content-length"]) : perRequest
        func fields(_ response: TestResponse) -> [String: String] {
            var fields: [String: String] = [:]
            for field in response.headers {
                let name = field.name.canonicalName.lowercased()
                guard !sometimes.contains(name) else { continue }
                fields[name] = varying.contains(name) ? "*" : field.value
            }
            return fields
        }
        #expect(fields(head) == fields(get), "HEAD \(uri)")
        #expect(head.headers[.contentLength] != nil, "HEAD \(uri) has no Content-Length")
        if get.status == .ok, uri != "/metrics" {
            #expect(head.headers[.contentLength] == String(get.body.readableBytes), "HEAD \(uri)")
        }
    }

    @Test func aMethodAKnownPathDoesNotHaveIs405WithAllowAndAnUnknownPathStays404() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.options, "/message", "GET, HEAD, POST"),
                (.patch, "/message", "GET, HEAD, POST"),
                (.patch, "/message/\(ObjectID().hex)", "GET, HEAD, PUT, DELETE"),
                (.patch, "/channel/\(Legacy.channelID.hex)", "GET, HEAD, PUT, DELETE"),
                (.get, "/area/\(Legacy.channelID.hex)", "POST"),
                (.post, "/healthz", "GET, HEAD"),
                (.put, "/portal/login", "GET, HEAD, POST"),
                (HTTPRequest.Method("PROPFIND")!, "/openapi.json", "GET, HEAD"),
            ]
            for (method, uri, allow) in cases {
                let response = try await hub.request(method, uri, as: .admin)
                #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                #expect(response.errorCode == "method_not_allowed", "\(method) \(uri)")
            }
            for uri in ["/nothing", "/message/a/b", "/portal/nothing/here"] {
                let response = try await hub.request(.options, uri)
                #expect(response.status == .notFound, "\(uri)")
                #expect(response.headers[.allow] == nil)
            }
        }
    }

    @Test func everyResponseSaysNosniffTheNetworkThreadsCubeAnswersToo() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let requests: [(HTTPRequest.Method, String, HubHarness.Caller)] = [
                (.get, "/channel", .anonymous), (.head, "/channel", .anonymous),
                (.get, "/channel/\(Legacy.channelID.hex)", .anonymous),
                (.get, "/healthz", .anonymous), (.get, "/readyz", .anonymous), (.get, "/openapi.json", .anonymous),
                (.get, "/metrics", .anonymous), (.get, "/nothing", .anonymous), (.post, "/message", .anonymous),
                (.post, "/message", .admin), (.options, "/message", .admin), (.get, "/portal/login", .anonymous),
                (.get, "/portal/static/portal.js", .anonymous), (.get, "/message/\(ObjectID().hex)", .anonymous),
            ]
            for (method, uri, caller) in requests {
                let response = try await hub.request(method, uri, as: caller)
                #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(method) \(uri): \(response.status)")
            }
        }
    }

    @Test func aBodyShorterThanItsContentLengthIs400IncompleteBodyNot500() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let port = try #require(hub.client.port)
            let partial = #"{"title": "Library", "desc": "Clo"#
            for (path, type, auth) in [
                ("/message", "application/json", "Authorization: Bearer \(HubHarness.adminToken)\r\n"),
                ("/channel", "application/json", "Authorization: Bearer \(HubHarness.adminToken)\r\n"),
                ("/portal/login", "application/x-www-form-urlencoded", ""),
            ] {
                let request =
                    "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(auth)Content-Type: \(type)\r\n"
                    + "Content-Length: 200\r\nConnection: close\r\n\r\n\(partial)"
                let answer = try await RawHTTP.exchange(port: port, sending: request, halfClose: true)
                #expect(answer.hasPrefix("HTTP/1.1 400"), "\(path): \(answer.prefix(200))")
                if path != "/portal/login" { #expect(answer.contains("incomplete_body"), "\(path)") }
            }
            // Nothing was stored, and the hub is fine.
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
            #expect(try await hub.request(.get, "/healthz").status == .ok)
        }
    }
}

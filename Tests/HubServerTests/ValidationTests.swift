import DAO
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Refused requests: clear errors, nothing changed")
struct ValidationTests {
    static let area = "/area/\(Legacy.channelID.hex)"
    static let subject = "/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)"

    @Test(arguments: [
        (area, #"{"name": 5, "desc": "d"}"#, 422, "invalid_field", "name"),
        (area, #"{"desc": "d"}"#, 422, "missing_field", "name"),
        (area, #"["name", "desc"]"#, 422, "invalid_body", "object"),
        (area, #"{"name": "n", "desc": "d", "access": "ann"}"#, 422, "invalid_field", "access"),
        (area, #"{"name": "n", "desc": "d", "access": [1]}"#, 422, "invalid_field", "access[0]"),
        (area, #"{"name": "n", "desc": "d", "$set": {"x": 1}}"#, 422, "invalid_body", "$set"),
        (area, #"{"name": "n", "desc": "d", "a.b": 1}"#, 422, "invalid_body", "a.b"),
        (area, #"{"name": "n", "desc": "#, 400, "malformed_json", "JSON"),
        (area, #"{"name": "\#(String(repeating: "x", count: 201))", "desc": "d"}"#, 422, "field_too_long", "name"),
        (subject, #"{"name": "n", "desc": "d"}"#, 422, "missing_field", "opt"),
        (
            subject, #"{"name": "n", "desc": "d", "opt": {"level": "Always", "distribution": "Alert"}}"#, 422,
            "invalid_field", "opt.level"
        ),
        (
            subject, #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Push"}}"#, 422, "invalid_field",
            "opt.distribution"
        ),
        (subject, #"{"name": "n", "desc": "d", "opt": "Alert"}"#, 422, "invalid_field", "opt"),
    ])
    func badBodiesAreRefusedNamingTheField(path: String, body: String, status: Int, code: String, field: String)
        async throws
    {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try await hub.cubeSnapshot()
            let response = try await hub.request(.post, path, as: .admin, json: body)
            #expect(response.status.code == status)
            #expect(response.errorCode == code)
            #expect(try response.json()[path: "error.message"]?.stringValue?.contains(field) == true)
            #expect(try await hub.cubeSnapshot() == before)
        }
    }

    @Test func malformedIdsAre400() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            for path in [
                "/channel/123", "/area/zzzzzzzzzzzzzzzzzzzzzzzz", "/message/nothex",
                "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)x",
            ] {
                let method: HTTPRequest.Method = path.hasPrefix("/area") ? .post : .get
                let response = try await hub.request(
                    method, path, as: .admin, json: method == .post ? #"{"name":"n","desc":"d"}"# : nil)
                if response.status == .notFound {
                    #expect(response.errorCode == "not_found", "\(path)")  // no route of that shape
                } else if response.status == .methodNotAllowed {
                    #expect(response.errorCode == "method_not_allowed", "\(path)")  // that shape, other methods
                } else {
                    #expect(response.status == .badRequest, "\(path)")
                    #expect(response.errorCode == "invalid_id", "\(path)")
                }
            }
        }
    }

    @Test func nonJSONBodiesAre415AndHugeOnes413() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try await hub.cubeSnapshot()
            let form = try await hub.request(
                .post, Self.area, as: .admin, json: "name=n&desc=d",
                contentType: "application/x-www-form-urlencoded")
            #expect(form.status == .unsupportedMediaType)
            #expect(form.errorCode == "unsupported_media_type")
            let huge = #"{"name": "n", "desc": "\#(String(repeating: "x", count: 70_000))"}"#
            let tooLarge = try await hub.request(.post, Self.area, as: .admin, json: huge)
            #expect(tooLarge.status == .contentTooLarge)
            #expect(tooLarge.errorCode == "body_too_large")
            #expect(try await hub.cubeSnapshot() == before)
        }
    }

    @Test func unknownRoutesAnswerJSON404() async throws {
        try await HubHarness.with { hub in
            let response = try await hub.request(.get, "/nothing/here")
            #expect(response.status == .notFound)
            #expect(response.errorCode == "not_found")
        }
    }
}

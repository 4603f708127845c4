@testable import Curl
import FakeFCM
import FCM
import Foundation
import Testing

@Suite("The fake FCM refuses what FCM refuses")
struct FakeFCMTests {
    static let invalidBodies: [(String, String)] = [
        (#"{"message": {"data": {"a": "b"}}}"#, "Exactly one of"),
        (#"{"message": {"topic": "a", "token": "b"}}"#, "Exactly one of"),
        (#"{"message": {"topic": "/topics/news"}}"#, "Invalid topic name"),
        (#"{"message": {"topic": "\#(String(repeating: "t", count: 901))"}}"#, "Invalid topic name"),
        (#"{"message": {"topic": "news", "data": {"count": 1}}}"#, "TYPE_STRING"),
        (
            #"{"message": {"topic": "news", "data": {"a": "b"}, "apns": {"headers": {"apns-priority": "10"}}}}"#,
            "must be 5"
        ),
        (#"{"message": {"topic": "news", "data": {"a": "\#(String(repeating: "x", count: 4096))"}}}"#, "too big"),
        (#"{"message": {"topic": "news"}, "to": "/topics/news"}"#, "Unknown name"),
        (#"{"message": {"topic": "news", "android": {"ttl": "10"}}}"#, "android.ttl"),
        (#"{"message": {"topic": "news", "priority": "high"}}"#, "Unknown name"),
        ("not json", "Invalid JSON"),
    ]

    @Test(arguments: invalidBodies)
    func aBodyFCMWouldRefuseIsA400InvalidArgument(body: String, expected: String) async throws {
        try await FCMHarness.with { harness in
            let token = try await harness.tokenProvider().accessToken()
            let response = try await post(body, token: token, harness)
            #expect(response.status == 400)
            let error = JSON.object(response.body)["error"] as? [String: Any]
            #expect(error?["status"] as? String == "INVALID_ARGUMENT")
            #expect((error?["message"] as? String)?.contains(expected) == true, "\(String(describing: error))")
            #expect(harness.fake.received.isEmpty)
        }
    }

    @Test func aMinimalTopicMessageIsAccepted() async throws {
        try await FCMHarness.with { harness in
            let token = try await harness.tokenProvider().accessToken()
            let response = try await post(#"{"message": {"topic": "a-Z_0.9~%"}}"#, token: token, harness)
            #expect(response.status == 200)
            #expect(JSON.object(response.body)["name"] as? String == harness.fake.received.first?.name)
        }
    }

    @Test(arguments: [nil, "Bearer not-a-token", "Basic abc"])
    func messagesSendWithoutAValidBearerTokenIs401WithAnFCMErrorBody(authorization: String?) async throws {
        try await FCMHarness.with { harness in
            let response = try await harness.http.post(
                url: harness.fake.baseURL + "/v1/projects/msi-test/messages:send",
                headers: authorization.map { [HTTPHeader("Authorization", $0)] } ?? [],
                body: Array(#"{"message": {"topic": "news"}}"#.utf8)
            )
            #expect(response.status == 401)
            #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
            let error = JSON.object(response.body)["error"] as? [String: Any]
            #expect((error?["code"] as? NSNumber)?.intValue == 401)
            #expect(error?["status"] as? String == "UNAUTHENTICATED")
            #expect(harness.fake.unauthorizedCalls == 1)
        }
    }

    @Test func theTokenEndpointAnswersLikeGoogle() async throws {
        try await FCMHarness.with { harness in
            let wrongGrant = try await harness.http.post(
                url: harness.fake.tokenURI,
                headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
                body: Array("grant_type=password&assertion=x".utf8)
            )
            #expect(wrongGrant.status == 400)
            #expect(JSON.object(wrongGrant.body)["error"] as? String == "unsupported_grant_type")

            let token = try await harness.tokenProvider().accessToken()
            #expect(token.hasPrefix("ya29."))
            #expect(harness.fake.tokensIssued == 1)
        }
    }

    private func post(_ body: String, token: String, _ harness: FCMHarness) async throws -> CurlResponse {
        try await harness.http.post(
            url: harness.fake.baseURL + "/v1/projects/msi-test/messages:send",
            headers: [HTTPHeader("Authorization", "Bearer \(token)"), HTTPHeader("Content-Type", "application/json")],
            body: Array(body.utf8)
        )
    }
}

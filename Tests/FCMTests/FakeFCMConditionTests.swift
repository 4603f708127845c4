@testable import Curl
import FakeFCM
import FCM
import Foundation
import Testing

@Suite("The fake FCM delivers a condition send to the registrations whose topics satisfy it, as FCM")
struct FakeFCMConditionTests {
    /// Subscribes phone-1 to a, phone-2 to a and b, phone-3 to b and c, phone-4 to c (no call: the fake's state).
    private func subscribePhones(_ fake: FakeFCM) {
        for (phone, topics) in [
            ("phone-1", ["a"]), ("phone-2", ["a", "b"]), ("phone-3", ["b", "c"]),
            ("phone-4", ["c"]),
        ] {
            for topic in topics { fake.forceSubscribe(phone, to: topic) }
        }
    }

    /// The phones (of phone-1...4) whose inbox got the condition send, after draining every inbox.
    private func reached(_ condition: String, _ harness: FCMHarness) async throws -> [String] {
        let token = try await harness.tokenProvider().accessToken()
        let body = try JSONSerialization.data(withJSONObject: [
            "message": [
                "condition": condition,
                "data": ["k": "v"],
            ]
        ])
        let response = try await post(String(decoding: body, as: UTF8.self), token: token, harness)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return (1...4).map { "phone-\($0)" }.filter { !harness.fake.drainInbox($0).isEmpty }
    }

    @Test(arguments: [
        ("'a' in topics", ["phone-1", "phone-2"]),
        ("'a' in topics && !('b' in topics)", ["phone-1"]),
        ("'a' in topics || 'c' in topics", ["phone-1", "phone-2", "phone-3", "phone-4"]),
        // && binds tighter than ||.
        ("'a' in topics || 'b' in topics && 'c' in topics", ["phone-1", "phone-2", "phone-3"]),
        ("('a' in topics || 'b' in topics) && 'c' in topics", ["phone-3"]),
        ("!('a' in topics) && !('b' in topics)", ["phone-4"]),
        ("\"b\" in topics&&!('c' in topics)", ["phone-2"]),
        ("'news' in topics", []),
    ])
    func aConditionReachesExactlyTheRegistrationsItMatches(condition: String, expected: [String]) async throws {
        try await FCMHarness.with { harness in
            subscribePhones(harness.fake)
            let phones = try await reached(condition, harness)
            #expect(phones == expected)
        }
    }

    @Test func theHubsQuietConditionLeavesOutTheQuietTopicsSubscribers() async throws {
        try await FCMHarness.with { harness in
            subscribePhones(harness.fake)
            let condition = FCMMapping.condition(topic: "a", excluding: ["b", "q1", "q2", "q3", "q4"])
            let phones = try await reached(condition, harness)
            #expect(phones == ["phone-1"])
            let delivered = harness.fake.received.last.map { $0.message["condition"] as? String }
            #expect(delivered == condition)
        }
    }

    static let invalidConditions = [
        "'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics && 'f' in topics",
        "'a' in topics &&", "('a' in topics", "'a' in topics)", "'a' topics", "a in topics", "'a b' in topics",
        "'a' in topics & 'b' in topics", "", "'a' in topics 'b' in topics",
    ]

    @Test(arguments: invalidConditions)
    func aConditionFCMWouldRefuseIsA400InvalidArgument(condition: String) async throws {
        try await FCMHarness.with { harness in
            subscribePhones(harness.fake)
            let token = try await harness.tokenProvider().accessToken()
            let body = try JSONSerialization.data(withJSONObject: ["message": ["condition": condition]])
            let response = try await post(String(decoding: body, as: UTF8.self), token: token, harness)
            #expect(response.status == 400)
            let error = JSON.object(response.body)["error"] as? [String: Any]
            #expect(error?["status"] as? String == "INVALID_ARGUMENT")
            #expect(harness.fake.received.isEmpty)
            #expect((1...4).allSatisfy { harness.fake.drainInbox("phone-\($0)").isEmpty })
        }
    }

    @Test func fiveTopicsAreAccepted() async throws {
        try await FCMHarness.with { harness in
            subscribePhones(harness.fake)
            let five = "'a' in topics && !('b' in topics) && !('c' in topics) && !('d' in topics) && !('e' in topics)"
            let phones = try await reached(five, harness)
            #expect(phones == ["phone-1"])
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

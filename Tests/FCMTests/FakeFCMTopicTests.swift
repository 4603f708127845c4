@testable import Curl
import FakeFCM
import FCM
import Foundation
import Testing

@Suite("The fake FCM's topic subscription API and inboxes answer like FCM")
struct FakeFCMTopicTests {
    static let collection = "/v1/projects/msi-test/registrations/phone-1/topicSubscriptions"

    @Test func createAnswersTheSubscriptionThenAlreadyExists() async throws {
        try await FCMHarness.with { harness in
            let token = try await harness.tokenProvider().accessToken()
            let before = Date()
            let created = try await create("news", token: token, harness)
            #expect(created.status == 200)
            let subscription = JSON.object(created.body)
            #expect(
                subscription["name"] as? String == "projects/msi-test/registrations/phone-1/topicSubscriptions/news")
            #expect(subscription["topic_name"] as? String == "news")
            let createTime = try Date(
                subscription["create_time"] as? String ?? "",
                strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            #expect(abs(createTime.timeIntervalSince(before)) < 5)

            let again = try await create("news", token: token, harness)
            #expect(again.status == 409)
            let error = JSON.object(again.body)["error"] as? [String: Any]
            #expect((error?["code"] as? NSNumber)?.intValue == 409)
            #expect(error?["status"] as? String == "ALREADY_EXISTS")
        }
    }

    @Test func deleteAnswersAnEmptyObjectThenNotFound() async throws {
        try await FCMHarness.with { harness in
            let token = try await harness.tokenProvider().accessToken()
            _ = try await create("news", token: token, harness)
            let url = harness.fake.baseURL + Self.collection + "/news"
            let deleted = try await harness.http.delete(url: url, headers: [Self.bearer(token)])
            #expect(deleted.status == 200)
            #expect(JSON.canonical(deleted.body) == "{}")
            let missing = try await harness.http.delete(url: url, headers: [Self.bearer(token)])
            #expect(missing.status == 404)
            #expect((JSON.object(missing.body)["error"] as? [String: Any])?["status"] as? String == "NOT_FOUND")
        }
    }

    @Test(arguments: ["", "/topics/news", String(repeating: "t", count: 901), "news!"])
    func anInvalidTopicNameIsA400(topic: String) async throws {
        try await FCMHarness.with { harness in
            let token = try await harness.tokenProvider().accessToken()
            let response = try await create(topic, token: token, harness)
            #expect(response.status == 400)
            #expect((JSON.object(response.body)["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
            #expect(harness.fake.subscriptions(of: "phone-1").isEmpty)
        }
    }

    @Test(arguments: ["POST", "DELETE", "GET"])
    func everyCallWithoutAValidBearerTokenIs401(method: String) async throws {
        try await FCMHarness.with { harness in
            let headers = [HTTPHeader("Authorization", "Bearer not-a-token")]
            let url = harness.fake.baseURL + Self.collection
            let response =
                switch method {
                case "POST":
                    try await harness.http.post(url: url + "?topic_name=news", headers: headers, body: Array("{}".utf8))
                case "DELETE": try await harness.http.delete(url: url + "/news", headers: headers)
                default: try await harness.http.get(url: url, headers: headers)
                }
            #expect(response.status == 401)
            #expect((JSON.object(response.body)["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED")
            #expect(harness.fake.subscriptionCallCount == 1)
        }
    }

    @Test(arguments: [(nil, 100), ("0", 100), ("7", 7), ("5000", 2000)])
    func aListPageHoldsTheAskedSizeUpTo2000(pageSize: String?, expected: Int) async throws {
        try await FCMHarness.with { harness in
            for index in 0..<2100 {
                harness.fake.forceSubscribe("phone-1", to: "t\(index)")
            }
            let token = try await harness.tokenProvider().accessToken()
            let query = pageSize.map { "?pageSize=\($0)" } ?? ""
            let first = try await harness.http.get(
                url: harness.fake.baseURL + Self.collection + query, headers: [Self.bearer(token)])
            let page = JSON.object(first.body)
            let listed = page["topicSubscriptions"] as? [[String: Any]] ?? []
            #expect(listed.count == expected)
            let nextPageToken = try #require(page["nextPageToken"] as? String)

            let second = try await harness.http.get(
                url: harness.fake.baseURL + Self.collection + "?pageSize=2000&pageToken=\(nextPageToken)",
                headers: [Self.bearer(token)])
            let rest = JSON.object(second.body)["topicSubscriptions"] as? [[String: Any]] ?? []
            #expect(rest.count == min(2000, 2100 - expected))
            let names = (listed + rest).compactMap { $0["topic_name"] as? String }
            #expect(names == names.sorted())
            #expect(Set(names).count == names.count)
        }
    }

    @Test func subscriptionCallsAreCountedBySecond() async throws {
        try await FCMHarness.with { harness in
            let subscriptions = harness.fcmClient().topicSubscriptions
            for index in 0..<5 {
                try await subscriptions.subscribe(registration: "phone-1", topic: "t\(index)")
            }
            #expect(harness.fake.subscriptionCallCount == 5)
            #expect(harness.fake.subscriptionCallsPerSecond.values.reduce(0, +) == 5)
            #expect(harness.fake.sendCalls == 0)
        }
    }

    @Test func theInboxAndSubscriptionRoutesServeScripts() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            try await client.topicSubscriptions.subscribe(registration: "phone:1", topic: "news")
            try await client.topicSubscriptions.subscribe(registration: "phone:1", topic: "alerts")
            let body =
                #"{"message": {"topic": "news", "notification": {"title": "T", "body": "B"}, "data": {"k": "v"}}}"#
            _ = try await client.send(
                FCMRequest(
                    component: .notification, body: Array(body.utf8), payloadSize: 4,
                    isTruncated: false))

            let topics = try await harness.http.get(url: harness.fake.baseURL + "/_subscriptions/phone%3A1")
            #expect(JSON.canonical(topics.body) == #"{"topics":["alerts","news"]}"#)
            let inbox = try await harness.http.get(url: harness.fake.baseURL + "/_inbox/phone%3A1")
            #expect(
                JSON.canonical(inbox.body)
                    == #"{"messages":[{"data":{"k":"v"},"notification":{"body":"B","title":"T"},"topic":"news"}]}"#)
            let drained = try await harness.http.get(url: harness.fake.baseURL + "/_inbox/phone%3A1")
            #expect(JSON.canonical(drained.body) == #"{"messages":[]}"#)
        }
    }

    private func create(_ topic: String, token: String, _ harness: FCMHarness) async throws -> CurlResponse {
        let encoded = topic.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? topic
        return try await harness.http.post(
            url: harness.fake.baseURL + Self.collection + "?topic_name=\(encoded)",
            headers: [Self.bearer(token), HTTPHeader("Content-Type", "application/json")],
            body: Array("{}".utf8)
        )
    }

    private static func bearer(_ token: String) -> HTTPHeader {
        HTTPHeader("Authorization", "Bearer \(token)")
    }
}

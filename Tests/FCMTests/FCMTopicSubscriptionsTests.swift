@testable import Curl
import FakeFCM
import Foundation
import HubModel
import Testing

@testable import FCM

/// Some closures below say `async throws` outright: a `try` that appears only inside `#expect` does not make
/// the compiler infer a throwing closure.
@Suite("FCM topic subscriptions against the fake FCM")
struct FCMTopicSubscriptionsTests {
    static let phone = "fAKe:APA91b-phone_1"
    static let topic = RelayMessage.sample(.alert).topicKey

    @Test func subscribingTwiceAppliesOnceAndUnsubscribingTwiceRemovesOnce() async throws {
        try await FCMHarness.with { harness async throws in
            let subscriptions = harness.fcmClient().topicSubscriptions
            #expect(try await subscriptions.subscribe(registration: Self.phone, topic: "news") == .applied)
            #expect(try await subscriptions.subscribe(registration: Self.phone, topic: "news") == .alreadyApplied)
            #expect(harness.fake.subscriptions(of: Self.phone) == ["news"])
            #expect(harness.fake.subscribers(of: "news") == [Self.phone])

            #expect(try await subscriptions.unsubscribe(registration: Self.phone, topic: "news") == .applied)
            #expect(try await subscriptions.unsubscribe(registration: Self.phone, topic: "news") == .alreadyApplied)
            #expect(harness.fake.subscriptions(of: Self.phone).isEmpty)
            #expect(harness.fake.subscriptionCallCount == 4)
        }
    }

    @Test func registrationAndTopicArriveAsTheyAreWhateverTheirCharacters() async throws {
        try await FCMHarness.with { harness in
            let subscriptions = harness.fcmClient().topicSubscriptions
            let registration = "a:b/c?d&e=f%g h+i"
            let topic = "a%2Fb~c.d-e_f"
            try await subscriptions.subscribe(registration: registration, topic: topic)
            #expect(harness.fake.subscriptions(of: registration) == [topic])
            #expect(try await subscriptions.topics(of: registration) == [topic])
            #expect(try await subscriptions.unsubscribe(registration: registration, topic: topic) == .applied)
        }
    }

    @Test func topicsFollowsEveryPageInAStableOrder() async throws {
        try await FCMHarness.with { harness in
            let expected = (0..<2500).map { String(format: "topic-%04d", $0) }
            for topic in expected.shuffled() {
                harness.fake.forceSubscribe(Self.phone, to: topic)
            }
            harness.fake.forceSubscribe("another-phone", to: "elsewhere")
            let topics = try await harness.fcmClient().topicSubscriptions.topics(of: Self.phone)
            #expect(topics == expected)
            #expect(harness.fake.subscriptionCallCount == 2)  // pages of 2000 and 500
        }
    }

    @Test func aRegistrationWithoutSubscriptionsHasNoTopics() async throws {
        try await FCMHarness.with { harness async throws in
            #expect(try await harness.fcmClient().topicSubscriptions.topics(of: Self.phone).isEmpty)
        }
    }

    @Test func anUnregisteredRegistrationIsUnregisteredOnEveryCallAndOnATokenSend() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let subscriptions = client.topicSubscriptions
            try await subscriptions.subscribe(registration: Self.phone, topic: "news")
            harness.fake.markUnregistered(Self.phone)

            let subscribe = await #expect(throws: FCMError.self) {
                try await subscriptions.subscribe(registration: Self.phone, topic: "weather")
            }
            #expect(subscribe?.code == .unregistered)
            #expect(subscribe?.fcmErrorCode == "UNREGISTERED")
            #expect(subscribe?.isRetryable == false)
            let unsubscribe = await #expect(throws: FCMError.self) {
                try await subscriptions.unsubscribe(registration: Self.phone, topic: "news")
            }
            #expect(unsubscribe?.code == .unregistered)
            let list = await #expect(throws: FCMError.self) { try await subscriptions.topics(of: Self.phone) }
            #expect(list?.code == .unregistered)

            let send = await #expect(throws: FCMError.self) {
                try await client.send(Self.tokenRequest(to: Self.phone))
            }
            #expect(send?.code == .unregistered)
            #expect(send?.httpStatus == 404)
            #expect(send?.isRetryable == false)
            #expect(harness.fake.received.isEmpty)
        }
    }

    @Test func a404WithoutDetailMeansTheRegistrationOnCreateAndListButNotOnDelete() async throws {
        try await FCMHarness.with { harness async throws in
            let subscriptions = harness.fcmClient().topicSubscriptions
            harness.fake.failNextSubscriptionCalls(2, status: 404)
            let create = await #expect(throws: FCMError.self) {
                try await subscriptions.subscribe(registration: Self.phone, topic: "news")
            }
            #expect(create?.code == .unregistered)
            let list = await #expect(throws: FCMError.self) { try await subscriptions.topics(of: Self.phone) }
            #expect(list?.code == .unregistered)
            harness.fake.failNextSubscriptionCalls(1, status: 404)
            #expect(try await subscriptions.unsubscribe(registration: Self.phone, topic: "news") == .alreadyApplied)
        }
    }

    @Test func a429WithRetryAfterIsRetryableAfterThatDelay() async throws {
        try await FCMHarness.with { harness in
            let subscriptions = harness.fcmClient().topicSubscriptions
            harness.fake.failNextSubscriptionCalls(1, status: 429, retryAfter: "7")
            let error = await #expect(throws: FCMError.self) {
                try await subscriptions.subscribe(registration: Self.phone, topic: "news")
            }
            #expect(error?.code == .quotaExceeded)
            #expect(error?.httpStatus == 429)
            #expect(error?.isRetryable == true)
            #expect(error?.retryAfter == .seconds(7))
            #expect(harness.fake.subscriptions(of: Self.phone).isEmpty)
            // Only subscription calls fail: a send goes through.
            _ = try await harness.fcmClient().send(Self.tokenRequest(to: Self.phone))
            #expect(try await subscriptions.subscribe(registration: Self.phone, topic: "news") == .applied)
        }
    }

    @Test(arguments: [(500, FCMError.Code.internal), (503, FCMError.Code.unavailable)])
    func serverErrorsAreRetryable(status: Int, code: FCMError.Code) async throws {
        try await FCMHarness.with { harness in
            harness.fake.failNextSubscriptionCalls(1, status: status, retryAfter: "2")
            let error = await #expect(throws: FCMError.self) {
                try await harness.fcmClient().topicSubscriptions.topics(of: Self.phone)
            }
            #expect(error?.code == code)
            #expect(error?.isRetryable == true)
            #expect(error?.retryAfter == .seconds(2))
        }
    }

    @Test func aSlowFCMIsARetryableTimeout() async throws {
        try await FCMHarness.with(http: .init(requestTimeout: .seconds(2))) { harness in
            let tokens = harness.tokenProvider()
            _ = try await tokens.accessToken()  // only the subscription call is slow
            harness.fake.setResponseDelay(.seconds(5))
            let error = await #expect(throws: FCMError.self) {
                try await harness.fcmClient(tokens: tokens).topicSubscriptions
                    .subscribe(registration: Self.phone, topic: "news")
            }
            #expect(error?.code == .timeout)
            #expect(error?.isRetryable == true)
        }
    }

    @Test func aRevokedTokenIsRenewedOnceAndTheCallRetried() async throws {
        try await FCMHarness.with { harness in
            let subscriptions = harness.fcmClient().topicSubscriptions
            try await subscriptions.subscribe(registration: Self.phone, topic: "news")
            harness.fake.revokeAllTokens()
            try await subscriptions.subscribe(registration: Self.phone, topic: "weather")
            #expect(harness.fake.tokenExchanges == 2)
            #expect(harness.fake.subscriptionCallCount == 3)
            #expect(harness.fake.subscriptions(of: Self.phone) == ["news", "weather"])
        }
    }

    @Test func theSubscriptionsShareTheClientsAccessToken() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            _ = try await client.send(Self.tokenRequest(to: Self.phone))
            try await client.topicSubscriptions.subscribe(registration: Self.phone, topic: "news")
            #expect(harness.fake.tokenExchanges == 1)
        }
    }

    @Test func logModeCallsNothingAndSucceeds() async throws {
        try await FCMHarness.with { harness async throws in
            let recorder = LogRecorder()
            let subscriptions = harness.fcmClient(mode: .log, logger: recorder.logger()).topicSubscriptions
            #expect(try await subscriptions.subscribe(registration: Self.phone, topic: "news") == .applied)
            #expect(try await subscriptions.unsubscribe(registration: Self.phone, topic: "news") == .applied)
            #expect(try await subscriptions.topics(of: Self.phone).isEmpty)
            #expect(harness.fake.subscriptionCallCount == 0)
            #expect(harness.fake.tokenExchanges == 0)
            #expect(recorder.records.compactMap { $0.metadata["call"] } == ["subscribe", "unsubscribe", "list"])
            #expect(
                try await FCMClient.logOnly().topicSubscriptions.subscribe(registration: "r", topic: "t")
                    == .applied)
        }
    }

    @Test func validateModeSubscribesForReal() async throws {
        try await FCMHarness.with { harness in
            try await harness.fcmClient(mode: .validate).topicSubscriptions
                .subscribe(registration: Self.phone, topic: "news")
            #expect(harness.fake.subscriptions(of: Self.phone) == ["news"])
        }
    }

    @Test func aTopicMessageReachesOnlyTheSubscribedPhoneAndItsInboxDrainsOnce() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let listener = "phone-listening"
            let other = "phone-elsewhere"
            try await client.topicSubscriptions.subscribe(registration: listener, topic: Self.topic)
            try await client.topicSubscriptions.subscribe(registration: other, topic: "another-topic")
            let requests = client.requests(for: .sample(.alert))
            for request in requests {
                _ = try await client.send(request)
            }

            let inbox = harness.fake.drainInbox(listener)
            #expect(inbox.count == requests.count)
            #expect(inbox.allSatisfy { $0.topic == Self.topic })
            #expect(inbox.first?.notification?.title == "Snow day")
            #expect(inbox.first?.notification?.body == "School is closed today")
            #expect(inbox.last?.data["timestamp"] == "1700000000123")
            #expect(harness.fake.drainInbox(listener).isEmpty)
            #expect(harness.fake.drainInbox(other).isEmpty)
        }
    }

    @Test func aMessageSentToATopicReachesOnlyThoseSubscribedWhenItWasSent() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            harness.fake.forceSubscribe("early", to: Self.topic)
            _ = try await client.send(request)
            harness.fake.forceSubscribe("late", to: Self.topic)
            #expect(harness.fake.drainInbox("early").count == 1)
            #expect(harness.fake.drainInbox("late").isEmpty)
        }
    }

    @Test func aTokenMessageReachesThatPhone() async throws {
        try await FCMHarness.with { harness in
            _ = try await harness.fcmClient().send(Self.tokenRequest(to: Self.phone))
            let inbox = harness.fake.drainInbox(Self.phone)
            #expect(inbox.count == 1)
            #expect(inbox.first?.topic == nil)
            #expect(inbox.first?.data == ["kind": "ping"])
            #expect(inbox.first?.notification == nil)
        }
    }

    @Test func aValidateOnlyMessageIsNotDelivered() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient(mode: .validate)
            harness.fake.forceSubscribe(Self.phone, to: Self.topic)
            for request in client.requests(for: .sample(.alert)) + [Self.tokenRequest(to: Self.phone)] {
                _ = try await client.send(request)
            }
            #expect(harness.fake.received.count == 3)
            #expect(harness.fake.drainInbox(Self.phone).isEmpty)
        }
    }

    /// A data message to one registration token.
    static func tokenRequest(to registration: String) -> FCMRequest {
        let body = ["message": ["token": registration, "data": ["kind": "ping"]]]
        return FCMRequest(
            component: .data,
            body: Array((try? JSONSerialization.data(withJSONObject: body)) ?? Data()),
            payloadSize: 8,
            isTruncated: false
        )
    }
}

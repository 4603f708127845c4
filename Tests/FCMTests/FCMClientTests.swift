@testable import Curl
import FakeFCM
import Foundation
import HubModel
import Logging
import Testing

@testable import FCM

@Suite("FCM HTTP v1 client against the fake FCM")
struct FCMClientTests {
    @Test func anAlertReachesFCMAsItsTwoComponentsWithABearerToken() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let requests = client.requests(for: .sample(.alert, ttlSeconds: 600))
            var names: [String] = []
            for request in requests {
                names.append(try await client.send(request))
            }
            let received = harness.fake.received
            #expect(received.count == 2)
            #expect(received.map(\.body) == requests.map(\.body))
            #expect(received.allSatisfy { $0.project == "msi-test" && !$0.validateOnly })
            #expect(names == received.map(\.name))
            #expect(names.allSatisfy { $0.hasPrefix("projects/msi-test/messages/") })
            #expect(received[1].data["timestamp"] == "1700000000123")
        }
    }

    @Test func aTruncatedMessageIsWithinTheFakesPayloadLimit() async throws {
        try await FakeFCM.with(payloadLimit: 2048) { fake in
            let generated = try fake.makeServiceAccount()
            defer { generated.remove() }
            try await withHTTPClient { http in
                let client = FCMClient(
                    account: try ServiceAccount(contentsOfFile: generated.path), httpClient: http,
                    configuration: .init(endpoint: fake.baseURL))
                let message = RelayMessage.sample(.alert, message: String(repeating: "🎒 Schultasche ", count: 400))
                for request in client.requests(for: message) {
                    _ = try await client.send(request)
                }
                #expect(fake.received.last?.data["truncated"] == "true")
            }
        }
    }

    @Test func a401RenewsTheTokenOnceAndRetriesOnce() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            _ = try await client.send(request)
            harness.fake.revokeAllTokens()
            _ = try await client.send(request)
            #expect(harness.fake.tokenExchanges == 2)
            #expect(harness.fake.unauthorizedCalls == 1)
            #expect(harness.fake.sendStatuses == [200, 401, 200])
            #expect(harness.fake.received.count == 2)
        }
    }

    @Test func a401AfterTheRetryIsAnAuthErrorWithoutAThirdTry() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            harness.fake.failNext(2, status: 401)
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .unauthenticated)
            #expect(error?.status == "UNAUTHENTICATED")
            #expect(error?.isRetryable == false)
            #expect(harness.fake.sendCalls == 2)
            #expect(harness.fake.tokenExchanges == 2)
        }
    }

    @Test func a503WithRetryAfterIsRetryableAfterThatDelay() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            harness.fake.failNext(1, status: 503, retryAfter: "1")
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .unavailable)
            #expect(error?.httpStatus == 503)
            #expect(error?.status == "UNAVAILABLE")
            #expect(error?.fcmErrorCode == "UNAVAILABLE")
            #expect(error?.isRetryable == true)
            #expect(error?.retryAfter == .seconds(1))
            #expect(error?.message == "The service is currently unavailable.")
            _ = try await client.send(request)
            #expect(harness.fake.received.count == 1)
        }
    }

    @Test func a429WithoutRetryAfterWaitsAMinute() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            harness.fake.failNext(1, status: 429)
            let quota = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(quota?.code == .quotaExceeded)
            #expect(quota?.fcmErrorCode == "QUOTA_EXCEEDED")
            #expect(quota?.isRetryable == true)
            #expect(quota?.retryAfter == .seconds(60))

            harness.fake.failNext(1, status: 429, retryAfter: "7")
            let told = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(told?.retryAfter == .seconds(7))
        }
    }

    @Test(arguments: [
        (400, FCMError.Code.invalidArgument, false),
        (403, FCMError.Code.senderIdMismatch, false),
        (404, FCMError.Code.notFound, false),
        (500, FCMError.Code.internal, true),
        (503, FCMError.Code.unavailable, true),
    ])
    func fcmErrorsMapToCodesAndRetryability(status: Int, code: FCMError.Code, retryable: Bool) async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            harness.fake.failNext(1, status: status)
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == code)
            #expect(error?.isRetryable == retryable)
            #expect(error?.httpStatus == status)
            #expect(harness.fake.sendCalls == 1)
        }
    }

    @Test func aBodyFCMRefusesIsA400ThatIsNotRetried() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient()
            let bad = FCMRequest(
                component: .data,
                body: Array(#"{"message": {"topic": "/topics/news", "data": {"n": 1}}}"#.utf8),
                payloadSize: 0,
                isTruncated: false
            )
            let error = await #expect(throws: FCMError.self) { try await client.send(bad) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.status == "INVALID_ARGUMENT")
            #expect(error?.isRetryable == false)
            #expect(harness.fake.sendCalls == 1)
            #expect(harness.fake.received.isEmpty)
        }
    }

    @Test func aProjectTheAccountDoesNotServeIsNotFound() async throws {
        try await FCMHarness.with { harness in
            var account = harness.account
            account.projectID = "another-project"
            let client = FCMClient(
                account: account, httpClient: harness.http, configuration: .init(endpoint: harness.fake.baseURL))
            let request = try #require(client.requests(for: .sample(.information)).first)
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .notFound)
            #expect(error?.isRetryable == false)
        }
    }

    @Test func aSlowFCMIsARetryableTimeout() async throws {
        try await FCMHarness.with(http: .init(requestTimeout: .seconds(3))) { harness in
            let tokens = harness.tokenProvider()
            let client = harness.fcmClient(tokens: tokens)
            let request = try #require(client.requests(for: .sample(.information)).first)
            _ = try await tokens.accessToken()  // only messages:send is slow
            harness.fake.setResponseDelay(.seconds(6))
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .timeout)
            #expect(error?.isRetryable == true)
        }
    }

    @Test func anUnreachableFCMIsARetryableConnectionFailure() async throws {
        let fake = try await FakeFCM.start()
        let generated = try fake.makeServiceAccount()
        defer { generated.remove() }
        await fake.stop()
        try await withHTTPClient { http in
            let client = FCMClient(
                account: try ServiceAccount(contentsOfFile: generated.path), httpClient: http,
                configuration: .init(endpoint: fake.baseURL))
            let request = try #require(client.requests(for: .sample(.information)).first)
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .connectionFailed)
            #expect(error?.isRetryable == true)
        }
    }

    @Test func validateModeSendsValidateOnlyAndFCMDeliversNothing() async throws {
        try await FCMHarness.with { harness in
            let client = harness.fcmClient(mode: .validate)
            let requests = client.requests(for: .sample(.alert))
            #expect(requests.allSatisfy { JSON.object($0.body)["validate_only"] as? Bool == true })
            // Even a body mapped for sending is validated only.
            let unflagged = try #require(FCMMapping.requests(for: .sample(.information)).first)
            for request in requests + [unflagged] {
                let name = try await client.send(request)
                #expect(name == "projects/msi-test/messages/fake_message_id")
            }
            #expect(harness.fake.received.count == 3)
            #expect(harness.fake.received.allSatisfy { $0.validateOnly })
        }
    }

    @Test func logModeSendsNothingAndLogsEachBody() async throws {
        try await FCMHarness.with { harness in
            let recorder = LogRecorder()
            let client = harness.fcmClient(mode: .log, logger: recorder.logger())
            let requests = client.requests(for: .sample(.alert))
            for request in requests {
                let name = try await client.send(request)
                #expect(name.hasPrefix("projects/msi-test/messages/log-"))
            }
            #expect(harness.fake.sendCalls == 0)
            #expect(harness.fake.tokenExchanges == 0)
            let logged = recorder.records.filter { $0.metadata["body"] != nil }
            #expect(logged.map { $0.metadata["component"] } == ["notification", "data"])
            // Bodies hold the message's text: never in an info log.
            #expect(logged.allSatisfy { $0.level == .debug })
            #expect(logged.map { Array(($0.metadata["body"] ?? "").utf8) } == requests.map(\.body))
        }
    }

    @Test func logModeNeverLogsADevicesRegistrationToken() async throws {
        let recorder = LogRecorder()
        let client = FCMClient.logOnly(logger: recorder.logger())
        let request = FCMMapping.deviceRequest(
            for: .sample(.alert), token: "secret-registration-token", audience: .person)
        #expect(try await client.send(request).hasPrefix("projects/log/messages/log-"))
        let logged = try #require(recorder.records.first { $0.metadata["component"] == "device" })
        #expect(logged.metadata["body"] == nil)
        #expect(logged.metadata["payload_bytes"] == "\(request.payloadSize)")
        #expect(!recorder.records.contains { "\($0.message) \($0.metadata)".contains("secret-registration-token") })
    }

    @Test func aLogOnlyClientNeedsNoCredentials() async throws {
        let client = FCMClient.logOnly()
        let request = try #require(client.requests(for: .sample(.information)).first)
        #expect(try await client.send(request).hasPrefix("projects/log/messages/log-"))
    }

    @Test func retryAfterIsReadAsSecondsOrAsAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(FCMError.parseRetryAfter("120", now: now) == .seconds(120))
        #expect(FCMError.parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
        #expect(FCMError.parseRetryAfter("soon", now: now) == nil)
        #expect(FCMError.parseRetryAfter("-5", now: now) == nil)
    }
}

import Crypto
import HubModel
import _CryptoExtras
import FakeFCM
import Foundation
import Testing

@testable import FCM

@Suite("Access tokens from the service account")
struct AccessTokenTests {
    @Test func theAssertionIsAnRS256JWTWithTheClaimsGoogleAsksFor() throws {
        let generated = try TestServiceAccount.generate(tokenURI: "https://oauth2.example/token")
        defer { generated.remove() }
        let account = try ServiceAccount(contentsOfFile: generated.path)
        let jwt = try ServiceAccountJWT.make(for: account, issuedAt: 1_700_000_000)
        let parts = jwt.split(separator: ".").map(String.init)
        try #require(parts.count == 3)

        let header = try #require(decode(parts[0]))
        #expect(header["alg"] as? String == "RS256" && header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == generated.privateKeyID)
        let claims = try #require(decode(parts[1]))
        #expect(claims["iss"] as? String == generated.clientEmail)
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims["aud"] as? String == "https://oauth2.example/token")
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_700_000_000)
        #expect((claims["exp"] as? NSNumber)?.int64Value == 1_700_003_600)

        let signature = try #require(base64URL(parts[2]))
        let digest = SHA256.hash(data: Array("\(parts[0]).\(parts[1])".utf8))
        #expect(
            generated.publicKey.isValidSignature(
                .init(rawRepresentation: signature), for: digest, padding: .insecurePKCS1v1_5))
    }

    @Test func aHundredSendsCostOneTokenExchange() async throws {
        try await FCMHarness.with { harness in
            let tokens = harness.tokenProvider()
            let client = harness.fcmClient(tokens: tokens)
            let request = try #require(client.requests(for: .sample(.information)).first)
            for _ in 0..<100 {
                _ = try await client.send(request)
            }
            #expect(harness.fake.received.count == 100)
            #expect(harness.fake.tokenExchanges == 1)
            #expect(await tokens.exchangeCount == 1)
        }
    }

    @Test func aHundredConcurrentSendsCostOneTokenExchange() async throws {
        try await FCMHarness.with { harness in
            let tokens = harness.tokenProvider()
            let client = harness.fcmClient(tokens: tokens)
            let request = try #require(client.requests(for: .sample(.information)).first)
            let names = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await client.send(request) }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(names.count == 100)
            #expect(harness.fake.received.count == 100)
            #expect(harness.fake.tokenExchanges == 1)
            #expect(await tokens.exchangeCount == 1)
        }
    }

    @Test func aTokenNearItsExpiryIsRefreshedOnceForAllWaitingSenders() async throws {
        try await FCMHarness.with { harness in
            // The provider's clock starts an hour minus a minute ago, and so ends near the fake's real time.
            let clock = TestClock(Date().addingTimeInterval(-3540))
            let tokens = harness.tokenProvider(clock: clock)
            let client = harness.fcmClient(tokens: tokens)
            let request = try #require(client.requests(for: .sample(.information)).first)
            _ = try await client.send(request)
            clock.advance(by: 3599 - 61)  // still more than 60 s left (by its clock): cached
            _ = try await client.send(request)
            #expect(harness.fake.tokenExchanges == 1)

            clock.advance(by: 2)  // now within 60 s of expiry: renewed, once for 50 concurrent senders
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.send(request) }
                }
                try await group.waitForAll()
            }
            #expect(harness.fake.tokenExchanges == 2)
            #expect(await tokens.exchangeCount == 2)
            #expect(harness.fake.unauthorizedCalls == 0)
        }
    }

    @Test func aShortLivedTokenIsRenewedAfterItExpires() async throws {
        try await FCMHarness.with { harness in
            // Five seconds of life: used for two and a half (half, as it is shorter than two minutes), then renewed.
            // The provider's clock stands still until moved, so a slow machine cannot age the token early; the
            // fake's runs, so the life is long enough for a first send under a sanitizer.
            harness.fake.setTokenLifetime(seconds: 5)
            let clock = TestClock()
            let tokens = harness.tokenProvider(clock: clock)
            let client = harness.fcmClient(tokens: tokens)
            let request = try #require(client.requests(for: .sample(.information)).first)
            let first = try await tokens.accessToken()
            #expect(try await tokens.accessToken() == first)
            _ = try await client.send(request)
            try await Task.sleep(for: .milliseconds(5100))  // expired at the fake
            clock.advance(by: 5.1)
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await client.send(request) }
                }
                try await group.waitForAll()
            }
            #expect(try await tokens.accessToken() != first)
            #expect(harness.fake.tokenExchanges == 2)
            #expect(harness.fake.unauthorizedCalls == 0)
            #expect(harness.fake.received.count == 11)
        }
    }

    @Test func aForgedKeyIsRefusedByTheTokenEndpointAndReportedAsAnAuthError() async throws {
        try await FCMHarness.with { harness in
            let forged = try harness.testAccount.forged()
            defer { forged.remove() }
            let account = try ServiceAccount(contentsOfFile: forged.path)
            #expect(account.clientEmail == harness.account.clientEmail)
            let client = FCMClient(
                account: account, httpClient: harness.http, configuration: .init(endpoint: harness.fake.baseURL))
            let request = try #require(client.requests(for: .sample(.alert)).first)

            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .unauthenticated)
            #expect(error?.isRetryable == false)
            #expect(error?.httpStatus == 400)
            #expect(error?.status == "invalid_grant")
            #expect(error?.message.contains("Invalid JWT Signature") == true)
            #expect(harness.fake.tokenExchanges == 1)
            #expect(harness.fake.tokensIssued == 0)
            #expect(harness.fake.sendCalls == 0)
        }
    }

    @Test func aTokenEndpointOutageIsRetryable() async throws {
        try await FCMHarness.with { harness in
            harness.fake.failNextTokenExchanges(1, status: 503)
            let client = harness.fcmClient()
            let request = try #require(client.requests(for: .sample(.information)).first)
            let error = await #expect(throws: FCMError.self) { try await client.send(request) }
            #expect(error?.code == .unavailable)
            #expect(error?.isRetryable == true)
            // The failed exchange is not cached: the next send gets a token and goes through.
            _ = try await client.send(request)
            #expect(harness.fake.tokenExchanges == 2)
            #expect(harness.fake.received.count == 1)
        }
    }

    @Test func invalidatingAStaleTokenKeepsTheNewerOne() async throws {
        try await FCMHarness.with { harness in
            let tokens = harness.tokenProvider()
            let first = try await tokens.accessToken()
            await tokens.invalidate(token: first)
            let second = try await tokens.accessToken()
            #expect(second != first)
            await tokens.invalidate(token: first)  // a late 401 for the old token
            #expect(try await tokens.accessToken() == second)
            #expect(await tokens.exchangeCount == 2)
        }
    }

    private func decode(_ part: String) -> [String: Any]? {
        base64URL(part).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    private func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

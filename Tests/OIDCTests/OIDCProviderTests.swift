import Crypto
import Foundation
import HubTime
import JWTKit
import NIOConcurrencyHelpers
import OIDC
import SignedTokens
import Testing

/// `OIDCProvider`'s rules with an in-memory transport and an injected clock: one shared fetch of the documents,
/// refreshed after its interval and kept through a failed refresh, the keys loaded again for a new kid, PKCE in the
/// authorization URL, the client secret sent as the provider asks, and the id_token's checks.
@Suite("The OpenID provider's documents and code flow")
struct OIDCProviderTests {
    static let issuer = "https://id.test"
    static let discoveryURL = issuer + "/.well-known/openid-configuration"
    static let jwksURL = issuer + "/jwks"

    /// A provider behind `transport` with one ES256 key (`kid`), and the key to sign with.
    struct Fixture {
        let transport: MemoryTransport
        let clock = NIOLockedValueBox<Int64>(1_800_000_000_000)
        var key = ES256PrivateKey()
        var kid = "k1"

        init(delay: Duration = .zero, authMethods: String = #"["client_secret_basic", "client_secret_post"]"#) {
            transport = MemoryTransport(delay: delay)
            transport.set(
                OIDCProviderTests.discoveryURL,
                json: """
                    {"issuer": "\(OIDCProviderTests.issuer)", "authorization_endpoint": "\(OIDCProviderTests.issuer)/auth",
                     "token_endpoint": "\(OIDCProviderTests.issuer)/token", "jwks_uri": "\(OIDCProviderTests.jwksURL)",
                     "token_endpoint_auth_methods_supported": \(authMethods),
                     "end_session_endpoint": "\(OIDCProviderTests.issuer)/logout"}
                    """)
            publishKeys()
        }

        func publishKeys(_ extra: [(ES256PrivateKey, String)] = []) {
            let keys = ([(key, kid)] + extra).map { key, kid -> String in
                let parameters = key.publicKey.parameters!
                return
                    #"{"kty": "EC", "crv": "P-256", "kid": "\#(kid)", "x": "\#(parameters.x)", "y": "\#(parameters.y)"}"#
            }
            transport.set(OIDCProviderTests.jwksURL, json: #"{"keys": [\#(keys.joined(separator: ","))]}"#)
        }

        func provider(secret: String? = "s3cret") -> OIDCProvider {
            OIDCProvider(
                settings: OIDCSettings(issuer: OIDCProviderTests.issuer, clientID: "hub", clientSecret: secret),
                transport: transport, now: { [clock] in clock.withLockedValue { $0 } },
                refreshInterval: .seconds(3600), unknownKeyInterval: .seconds(30))
        }

        /// An id_token for `nonce`, signed with `key` under `kid`, with `change` applied to its claims.
        func idToken(
            nonce: String, key: ES256PrivateKey? = nil, kid: String? = nil, _ change: (inout Claims) -> Void = { _ in }
        )
            async throws -> String
        {
            let now = Int(clock.withLockedValue { $0 } / 1000)
            var claims = Claims(
                iss: OIDCProviderTests.issuer, sub: "u", aud: ["hub"], exp: now + 600, iat: now, nonce: nonce,
                email: "t@school.test")
            change(&claims)
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key ?? self.key, kid: JWKIdentifier(string: kid ?? self.kid))
            return try await keys.sign(claims, kid: JWKIdentifier(string: kid ?? self.kid))
        }

        func answerToken(_ idToken: String) {
            transport.state.withLockedValue { $0.tokenAnswer = (200, Array(#"{"id_token": "\#(idToken)"}"#.utf8)) }
        }
    }

    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: [String]
        var exp: Int
        var iat: Int
        var nonce: String
        var email: String
        var azp: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    @Test func concurrentSignInsShareOneFetchOfEachDocument() async throws {
        let fixture = Fixture(delay: .milliseconds(50))
        let provider = fixture.provider()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { _ = try await provider.begin(redirectURI: "https://hub.test/cb") }
            }
            try await group.waitForAll()
        }
        #expect(fixture.transport.gets(Self.discoveryURL) == 1 && fixture.transport.gets(Self.jwksURL) == 1)
    }

    @Test func theDocumentsAreRefreshedAfterTheirIntervalAndKeptThroughAFailedRefresh() async throws {
        let fixture = Fixture()
        let provider = fixture.provider()
        _ = try await provider.begin(redirectURI: "https://hub.test/cb")
        fixture.clock.withLockedValue { $0 += 3_599_000 }
        _ = try await provider.begin(redirectURI: "https://hub.test/cb")
        #expect(fixture.transport.gets(Self.discoveryURL) == 1)
        fixture.clock.withLockedValue { $0 += 2_000 }
        fixture.transport.state.withLockedValue { $0.failing = true }
        // The provider is down at the refresh: sign-ins go on with what was loaded, and for 30 s after the failure
        // none waits for another fetch.
        _ = try await provider.begin(redirectURI: "https://hub.test/cb")
        #expect(fixture.transport.gets(Self.discoveryURL) == 2)
        fixture.transport.state.withLockedValue { $0.failing = false }
        for _ in 0..<5 { _ = try await provider.begin(redirectURI: "https://hub.test/cb") }
        #expect(fixture.transport.gets(Self.discoveryURL) == 2)
        fixture.clock.withLockedValue { $0 += 30_000 }
        _ = try await provider.begin(redirectURI: "https://hub.test/cb")
        #expect(fixture.transport.gets(Self.discoveryURL) == 3)
        // Never loaded and unreachable: the sign-in says so, and the next ones within 30 s at once, without a fetch.
        let down = Fixture()
        down.transport.state.withLockedValue { $0.failing = true }
        let unreachable = down.provider()
        for _ in 0..<3 {
            await #expect { try await unreachable.begin(redirectURI: "https://hub.test/cb") } throws: {
                ($0 as? OIDCError)?.code == .unavailable
            }
        }
        #expect(down.transport.gets(Self.discoveryURL) == 1)
    }

    @Test func theAuthorizationURLCarriesStateNonceAndAnS256Challenge() async throws {
        let fixture = Fixture()
        let (pending, url) = try await fixture.provider().begin(
            redirectURI: "https://hub.test/portal/login/oidc/callback")
        let items = Dictionary(
            (URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        #expect(url.hasPrefix(Self.issuer + "/auth?"))
        #expect(
            items["response_type"] == "code" && items["client_id"] == "hub" && items["scope"] == "openid email profile")
        #expect(items["redirect_uri"] == "https://hub.test/portal/login/oidc/callback")
        #expect(
            items["state"] == pending.state && items["nonce"] == pending.nonce
                && items["code_challenge_method"] == "S256")
        let digest = Data(SHA256.hash(data: Data(pending.codeVerifier.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(items["code_challenge"] == digest && pending.codeVerifier.count == 43)
        #expect(Set([pending.state, pending.nonce, pending.codeVerifier]).count == 3)
    }

    @Test func theClientSecretGoesAsTheProviderAsksAndAPublicClientSendsOnlyItsID() async throws {
        for (methods, expectBasic) in [(#"["client_secret_basic"]"#, true), (#"["client_secret_post"]"#, false)] {
            let fixture = Fixture(authMethods: methods)
            let provider = fixture.provider()
            let (pending, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
            fixture.answerToken(try await fixture.idToken(nonce: pending.nonce))
            _ = try await provider.finish(code: "c", pending: pending, redirectURI: "https://hub.test/cb")
            let request = try #require(fixture.transport.state.withLockedValue { $0.tokenRequests.last })
            #expect(request.fields["code_verifier"] == pending.codeVerifier && request.fields["code"] == "c")
            #expect((request.basic?.user == "hub" && request.basic?.password == "s3cret") == expectBasic)
            #expect((request.fields["client_secret"] == "s3cret") == !expectBasic)
        }
        let fixture = Fixture()
        let provider = fixture.provider(secret: nil)
        let (pending, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
        fixture.answerToken(try await fixture.idToken(nonce: pending.nonce))
        _ = try await provider.finish(code: "c", pending: pending, redirectURI: "https://hub.test/cb")
        let request = try #require(fixture.transport.state.withLockedValue { $0.tokenRequests.last })
        #expect(request.basic == nil && request.fields["client_id"] == "hub" && request.fields["client_secret"] == nil)
    }

    @Test func aNewKidLoadsTheKeysAgainOnceAndAnUnknownOneIsRefused() async throws {
        var fixture = Fixture()
        let provider = fixture.provider()
        let (pending, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
        // The provider rotates to k2; the hub holds k1 only.
        let rotated = ES256PrivateKey()
        fixture.publishKeys([(rotated, "k2")])
        fixture.clock.withLockedValue { $0 += 31_000 }
        fixture.answerToken(try await fixture.idToken(nonce: pending.nonce, key: rotated, kid: "k2"))
        let token = try await provider.finish(code: "c", pending: pending, redirectURI: "https://hub.test/cb")
        #expect(token.claims.strings["email"] == "t@school.test" && fixture.transport.gets(Self.jwksURL) == 2)
        // A kid nobody publishes: one more load at most, and the sign-in is refused.
        fixture.kid = "k9"
        fixture.key = ES256PrivateKey()
        let (next, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
        fixture.answerToken(try await fixture.idToken(nonce: next.nonce))
        await #expect {
            try await provider.finish(code: "c", pending: next, redirectURI: "https://hub.test/cb")
        } throws: {
            ($0 as? OIDCError)?.code == .invalidIDToken
        }
        #expect(fixture.transport.gets(Self.jwksURL) == 2, "within 30 s of the last load: not loaded again")
    }

    @Test func everyClaimCheckRefusesItsToken() async throws {
        let cases: [(String, (inout Claims) -> Void)] = [
            ("issuer", { $0.iss = "https://other.test" }), ("audience", { $0.aud = ["other"] }),
            ("azp", { $0.aud = ["hub", "other"] }), ("azp named", { $0.azp = "other" }),
            ("expired", { $0.exp = $0.iat - 1 }),
            (
                "old",
                {
                    $0.iat -= 3_600; $0.exp = $0.iat + 7_200
                }
            ),
            ("future", { $0.iat += 600 }), ("nonce", { $0.nonce = "other" }),
        ]
        let fixture = Fixture()
        let provider = fixture.provider()
        for (name, change) in cases {
            let (pending, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
            fixture.answerToken(try await fixture.idToken(nonce: pending.nonce, change))
            do {
                _ = try await provider.finish(code: "c", pending: pending, redirectURI: "https://hub.test/cb")
                Issue.record("the \(name) check let the token through")
            } catch let error as OIDCError {
                #expect(error.code == .invalidIDToken, "\(name)")
            }
        }
        // Several audiences with azp the hub: accepted.
        let (pending, _) = try await provider.begin(redirectURI: "https://hub.test/cb")
        fixture.answerToken(
            try await fixture.idToken(nonce: pending.nonce) {
                $0.aud = ["hub", "api"]; $0.azp = "hub"
            })
        _ = try await provider.finish(code: "c", pending: pending, redirectURI: "https://hub.test/cb")
    }

    @Test func discoveryDocumentsOfTheThreeProviderKindsAreRead() throws {
        let google = try ProviderMetadata(
            json: Array(ProviderDocuments.google.utf8), expectedIssuer: "https://accounts.google.com")
        #expect(google.tokenEndpoint == "https://oauth2.googleapis.com/token" && google.endSessionEndpoint == nil)
        let issuer = "https://login.microsoftonline.com/\(ProviderDocuments.entraTenant)/v2.0"
        let entra = try ProviderMetadata(json: Array(ProviderDocuments.entra.utf8), expectedIssuer: issuer)
        #expect(entra.endSessionEndpoint?.hasSuffix("/oauth2/v2.0/logout") == true)
        let keycloak = try ProviderMetadata(
            json: Array(ProviderDocuments.keycloak.utf8), expectedIssuer: "https://id.school.example/realms/school")
        #expect(keycloak.jwksURI.hasSuffix("/protocol/openid-connect/certs"))
        // Another issuer than configured (a trailing slash is another issuer), or a plain-http token endpoint.
        #expect(throws: OIDCError.self) {
            try ProviderMetadata(
                json: Array(ProviderDocuments.google.utf8), expectedIssuer: "https://accounts.google.com/")
        }
        let insecure = ProviderDocuments.keycloak.replacingOccurrences(
            of: "\"token_endpoint\": \"https", with: "\"token_endpoint\": \"http")
        #expect {
            try ProviderMetadata(json: Array(insecure.utf8), expectedIssuer: "https://id.school.example/realms/school")
        } throws: {
            ($0 as? OIDCError)?.code == .insecureEndpoint
        }
        let noS256 = ProviderDocuments.google.replacingOccurrences(of: #"["plain", "S256"]"#, with: #"["plain"]"#)
        #expect(throws: OIDCError.self) {
            try ProviderMetadata(json: Array(noS256.utf8), expectedIssuer: "https://accounts.google.com")
        }
    }
}

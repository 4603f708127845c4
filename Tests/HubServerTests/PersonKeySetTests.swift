import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import Synchronization
import Testing

/// The JWKS loader the hub runs with (`PersonKeySet.loader`) against an identity provider's key endpoint on
/// 127.0.0.1: its URL branch fetches with libcurl as it does from an `https://` URL (the configuration takes no
/// other scheme; TLS itself is libcurl's and is not exercised here).
@Suite("Person assertions' keys fetched from a URL")
struct PersonKeySetTests {
    /// How many times the key endpoint was asked for the keys.
    final class Fetches: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Runs `body` with the base URL of a key endpoint answering GET /jwks with `jwks` (anything else 404).
    static func withKeyEndpoint(jwks: String, _ body: (String, Fetches) async throws -> Void) async throws {
        let fetches = Fetches()
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            fetches.count.add(1, ordering: .relaxed)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: jwks)))
        }
        let server = try await LocalHTTPServer.start(router, name: "idp")
        do {
            try await body("http://127.0.0.1:\(server.port)", fetches)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    @Test func anRS256AssertionVerifiesWithKeysFetchedFromTheURLOnceForManyAssertions() async throws {
        let (signer, jwk) = try await AssertionSigner.rsa(kid: "idp-1")
        try await Self.withKeyEndpoint(jwks: #"{"keys": [\#(jwk)]}"#) { base, fetches in
            let verifier = PersonAssertionVerifier(
                settings: PersonAssertionSettings(keySet: .url(base + "/jwks"), issuer: PersonBindingTests.issuer,
                                                  audience: PersonBindingTests.audience),
                loadKeySet: PersonKeySet.loader)
            for person in ["ann", "ben", "cai"] {
                let assertion = try await signer.sign(AssertionSigner.claims(sub: person))
                #expect(try await verifier.person(in: assertion) == person)
            }
            #expect(fetches.count.load(ordering: .relaxed) == 1)
        }
    }

    @Test func anEndpointThatDoesNotAnswer200IsRefusedAsInvalidAssertion() async throws {
        try await Self.withKeyEndpoint(jwks: #"{"keys": []}"#) { base, fetches in
            let loaded = try await PersonKeySet.loader(.url(base + "/jwks"))
            #expect(loaded == #"{"keys": []}"#)
            let error = await #expect(throws: AssertionRefusal.self) {
                _ = try await PersonKeySet.loader(.url(base + "/missing"))
            }
            #expect(error?.code == .invalidAssertion)
            #expect(fetches.count.load(ordering: .relaxed) == 1)
        }
    }
}

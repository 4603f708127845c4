import _CryptoExtras
import Crypto
import Foundation
import HubCore
import JWTKit
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

    /// Runs `body` with the base URL of a key endpoint answering GET /jwks with `jwks` (anything else 404), each
    /// answer `delay` late.
    static func withKeyEndpoint(
        jwks: String, delay: Duration = .zero,
        _ body: (String, Fetches) async throws -> Void
    ) async throws {
        let fetches = Fetches()
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            fetches.count.add(1, ordering: .relaxed)
            if delay > .zero { try await Task.sleep(for: delay) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
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
                settings: PersonAssertionSettings(
                    keySet: .url(base + "/jwks"), issuer: PersonBindingTests.issuer,
                    audience: PersonBindingTests.audience),
                loadKeySet: PersonKeySet.loader)
            for person in ["ann", "ben", "cai"] {
                let assertion = try await signer.sign(AssertionSigner.claims(sub: person))
                #expect(try await verifier.person(in: assertion) == person)
            }
            #expect(fetches.count.load(ordering: .relaxed) == 1)
        }
    }

    @Test func aKeyWithoutAlgVerifiesOnlyTheAlgorithmOfItsTypeWhateverTheTokenSays() async throws {
        let rsa = try await PinnedKeys.rsa(kid: "rsa-plain")
        let ec = try await PinnedKeys.ecdsa(kid: "ec-plain")
        try await Self.withKeyEndpoint(jwks: #"{"keys": [\#(rsa.jwk), \#(ec.jwk)]}"#) { base, _ in
            let verifier = PersonAssertionVerifier(
                settings: PersonAssertionSettings(
                    keySet: .url(base + "/jwks"), issuer: PersonBindingTests.issuer,
                    audience: PersonBindingTests.audience),
                loadKeySet: PersonKeySet.loader)
            let claims = { (person: String) in AssertionSigner.claims(sub: person) }
            // jwt-kit alone would take the first token's alg for a key without one, and keep it: RS512 first.
            let refused: [(String, String)] = [
                ("RS512 signed", try await rsa.rs512.sign(claims("rs512"))),
                ("PS256 signed", try await rsa.ps256.sign(claims("ps256"))),
                ("RS512 declared, RS256 signed", try rsa.declaring("RS512", claims: #"{"sub": "declared"}"#)),
                ("HS256 under the EC key's kid", try await ec.hs256.sign(claims("hs256"))),
            ]
            for (label, token) in refused {
                let error = await #expect(throws: AssertionRefusal.self, "\(label)") {
                    try await verifier.person(in: token)
                }
                #expect(error?.code == .invalidAssertion, "\(label)")
            }
            #expect(try await verifier.person(in: try await rsa.rs256.sign(claims("ann"))) == "ann")
            #expect(try await verifier.person(in: try await ec.es256.sign(claims("ben"))) == "ben")
            // Still pinned after good tokens.
            await #expect(throws: AssertionRefusal.self) {
                try await verifier.person(in: try await rsa.rs512.sign(claims("x")))
            }
        }
    }

    @Test func concurrentVerificationsThatWantTheKeysAgainShareOneFetch() async throws {
        let (signer, jwk) = try await AssertionSigner.rsa(kid: "idp-1")
        let (stranger, _) = try await AssertionSigner.rsa(kid: "idp-2")
        let (impostor, _) = try await AssertionSigner.rsa(kid: "idp-1")
        try await Self.withKeyEndpoint(jwks: #"{"keys": [\#(jwk)]}"#, delay: .milliseconds(300)) { base, fetches in
            let clock = Atomic<Int64>(Int64(Date().timeIntervalSince1970 * 1000))
            let verifier = PersonAssertionVerifier(
                settings: PersonAssertionSettings(
                    keySet: .url(base + "/jwks"), issuer: PersonBindingTests.issuer,
                    audience: PersonBindingTests.audience),
                loadKeySet: PersonKeySet.loader, now: { clock.load(ordering: .relaxed) })
            #expect(try await verifier.person(in: try await signer.sign(AssertionSigner.claims(sub: "ann"))) == "ann")
            #expect(fetches.count.load(ordering: .relaxed) == 1)
            // Past the 30 seconds after which a failure may load the keys again: 24 failures at once, an unknown kid
            // or a signature that does not verify, load them once.
            clock.add(31_000, ordering: .relaxed)
            var tokens: [String] = []
            for index in 0..<24 {
                let claims = AssertionSigner.claims(sub: "intruder-\(index)")
                tokens.append(try await (index.isMultiple(of: 2) ? stranger : impostor).sign(claims))
            }
            let refusals = await withTaskGroup(of: Bool.self) { group in
                for token in tokens {
                    group.addTask { (try? await verifier.person(in: token)) == nil }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(refusals == 24)
            #expect(fetches.count.load(ordering: .relaxed) == 2)
            // The good key still verifies, from the keys loaded.
            #expect(try await verifier.person(in: try await signer.sign(AssertionSigner.claims(sub: "ben"))) == "ben")
            #expect(fetches.count.load(ordering: .relaxed) == 2)
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

/// Keys published without `alg`, and tokens that try other algorithms under their kids.
enum PinnedKeys {
    /// An RSA key signing as RS256, RS512 and PS256, its public JWK without `alg`, and tokens declaring any header.
    struct RSA {
        let rs256: AssertionSigner, rs512: AssertionSigner, ps256: AssertionSigner
        let jwk: String
        let key: _RSA.Signing.PrivateKey
        let kid: String

        /// A token whose header says `alg` but whose signature is RS256 over it, with `claims` (JSON) and good times.
        func declaring(_ alg: String, claims: String) throws -> String {
            let now = Int(Date().timeIntervalSince1970)
            let header = #"{"alg": "\#(alg)", "kid": "\#(kid)", "typ": "JWT"}"#
            let payload =
                String(claims.dropLast())
                + #", "iss": "\#(PersonBindingTests.issuer)", "aud": "\#(PersonBindingTests.audience)", "iat": \#(now - 5), "exp": \#(now + 300)}"#
            let input =
                AssertionSigner.base64URL(Data(header.utf8)) + "." + AssertionSigner.base64URL(Data(payload.utf8))
            let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
            return input + "." + AssertionSigner.base64URL(signature.rawRepresentation)
        }
    }

    static func rsa(kid: String) async throws -> RSA {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try key.publicKey.getKeyPrimitives()
        let identifier = JWKIdentifier(string: kid)
        func signer(_ add: (JWTKeyCollection) async throws -> Void) async throws -> AssertionSigner {
            let keys = JWTKeyCollection()
            try await add(keys)
            return AssertionSigner(keys: keys, kid: kid)
        }
        let pem = key.pemRepresentation
        let jwk =
            #"{"kty": "RSA", "use": "sig", "kid": "\#(kid)", "n": "\#(AssertionSigner.base64URL(primitives.modulus))", "e": "\#(AssertionSigner.base64URL(primitives.publicExponent))"}"#
        return RSA(
            rs256: try await signer {
                await $0.add(rsa: try Insecure.RSA.PrivateKey(pem: pem), digestAlgorithm: .sha256, kid: identifier)
            },
            rs512: try await signer {
                await $0.add(rsa: try Insecure.RSA.PrivateKey(pem: pem), digestAlgorithm: .sha512, kid: identifier)
            },
            ps256: try await signer {
                await $0.add(pss: try Insecure.RSA.PrivateKey(pem: pem), digestAlgorithm: .sha256, kid: identifier)
            },
            jwk: jwk, key: key, kid: kid)
    }

    /// An EC P-256 key signing as ES256, its public JWK without `alg`, and an HS256 signer naming its kid.
    static func ecdsa(kid: String) async throws -> (es256: AssertionSigner, hs256: AssertionSigner, jwk: String) {
        let key = P256.Signing.PrivateKey()
        let point = key.publicKey.x963Representation.dropFirst()
        let es256 = JWTKeyCollection(), hs256 = JWTKeyCollection()
        await es256.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        // The classic confusion: the public key's coordinates as an HMAC secret.
        await hs256.add(
            hmac: HMACKey(from: AssertionSigner.base64URL(point)), digestAlgorithm: .sha256,
            kid: JWKIdentifier(string: kid))
        let jwk =
            #"{"kty": "EC", "use": "sig", "kid": "\#(kid)", "crv": "P-256", "x": "\#(AssertionSigner.base64URL(point.prefix(32)))", "y": "\#(AssertionSigner.base64URL(point.suffix(32)))"}"#
        return (AssertionSigner(keys: es256, kid: kid), AssertionSigner(keys: hs256, kid: kid), jwk)
    }
}

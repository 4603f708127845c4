import Crypto
import Foundation
@testable import HubCore
import JWTKit
import Synchronization
import Testing

/// The person assertion verifier alone, on a clock the test sets: the claim checks at their edges and the JWKS
/// cache (loaded once, loaded again for an unknown `kid`).
@Suite("Person assertions")
struct PersonAssertionVerifierTests {
    static let settings = PersonAssertionSettings(
        secret: "verifier-secret-0123456789abcdef", issuer: "https://idp.example",
        audience: "msi-app")
    /// 2026-01-01 in Unix ms: the clock every verifier here reads.
    static let now: Int64 = 1_767_225_600_000

    /// A JWT of `claims`, HS256 with the settings' secret unless `keys` is given.
    static func token(_ claims: [String: any Sendable], keys: JWTKeyCollection? = nil, kid: String? = nil) async throws
        -> String
    {
        let collection: JWTKeyCollection
        if let keys {
            collection = keys
        } else {
            collection = JWTKeyCollection()
            await collection.add(hmac: HMACKey(from: settings.secret!), digestAlgorithm: .sha256)
        }
        let json = try JSONSerialization.data(withJSONObject: claims.mapValues { $0 as Any })
        return try await collection.sign(RawClaims(json: json), kid: kid.map { JWKIdentifier(string: $0) })
    }

    /// A change that removes the claim.
    static let removed = "(removed)"

    /// Good claims at `now`, with `changes` applied (`removed` removes one).
    static func claims(_ changes: [String: any Sendable] = [:]) -> [String: any Sendable] {
        var claims: [String: any Sendable] = [
            "iss": "https://idp.example", "aud": "msi-app", "sub": "person-1",
            "exp": Double(now / 1000 + 300), "iat": Double(now / 1000 - 5),
        ]
        for (name, value) in changes { claims[name] = (value as? String) == removed ? nil : value }
        return claims
    }

    static func verifier(
        _ settings: PersonAssertionSettings = settings,
        loader: @escaping PersonAssertionVerifier.KeySetLoader = PersonAssertionVerifier.fileLoader
    )
        -> PersonAssertionVerifier
    {
        PersonAssertionVerifier(settings: settings, loadKeySet: loader, now: { now })
    }

    @Test func theTimesAreCheckedAtTheirEdges() async throws {
        let verifier = Self.verifier()
        let seconds = Double(Self.now / 1000)
        #expect(try await verifier.person(in: try await Self.token(Self.claims())) == "person-1")
        // 10 minutes old is still good; a second more is not.
        #expect(try await verifier.person(in: try await Self.token(Self.claims(["iat": seconds - 600]))) == "person-1")
        await #expect(throws: AssertionRefusal.self) {
            try await verifier.person(in: try await Self.token(Self.claims(["iat": seconds - 601])))
        }
        // An iat a little ahead is a clock difference; far ahead is refused, as is none.
        #expect(try await verifier.person(in: try await Self.token(Self.claims(["iat": seconds + 30]))) == "person-1")
        for changes: [String: any Sendable] in [
            ["iat": seconds + 600], ["iat": Self.removed], ["exp": seconds], ["exp": Self.removed],
        ] {
            await #expect(throws: AssertionRefusal.self) {
                try await verifier.person(in: try await Self.token(Self.claims(changes)))
            }
        }
    }

    @Test func theAudienceMayBeAnArrayAndThePersonIdHasItsLimits() async throws {
        let verifier = Self.verifier()
        #expect(
            try await verifier.person(in: try await Self.token(Self.claims(["aud": ["other", "msi-app"]])))
                == "person-1")
        let refusals: [[String: any Sendable]] = [
            ["aud": ["other"]], ["aud": Self.removed], ["iss": Self.removed], ["sub": ""],
            ["sub": String(repeating: "p", count: 257)],
            ["sub": 42],
        ]
        for changes in refusals {
            let error = await #expect(throws: AssertionRefusal.self) {
                try await verifier.person(in: try await Self.token(Self.claims(changes)))
            }
            #expect(error?.code == .invalidAssertion)
        }
        #expect(
            try await verifier.person(
                in: try await Self.token(Self.claims(["sub": String(repeating: "p", count: 256)]))
            )
            .count == 256)
    }

    @Test func nothingConfiguredRefusesEveryAssertion() async throws {
        let verifier = Self.verifier(PersonAssertionSettings())
        let error = await #expect(throws: AssertionRefusal.self) {
            try await verifier.person(in: try await Self.token(Self.claims()))
        }
        #expect(error?.code == .notConfigured)
    }

    @Test func anUnknownKidLoadsTheKeySetAgain() async throws {
        let first = P256.Signing.PrivateKey(), second = P256.Signing.PrivateKey()
        let published = Shared<[(String, P256.Signing.PrivateKey)]>([("k1", first)])
        let loads = Shared(0)
        let settings = PersonAssertionSettings(
            keySet: .url("https://idp.example/jwks"), issuer: "https://idp.example",
            audience: "msi-app")
        let verifier = PersonAssertionVerifier(
            settings: settings,
            loadKeySet: { _ in
                loads.value.withLock { $0 += 1 }
                let keys = published.value.withLock { $0 }.map { kid, key in
                    let point = key.publicKey.x963Representation.dropFirst()
                    return
                        #"{"kty": "EC", "alg": "ES256", "kid": "\#(kid)", "crv": "P-256", "x": "\#(Self.base64URL(point.prefix(32)))", "y": "\#(Self.base64URL(point.suffix(32)))"}"#
                }
                return #"{"keys": [\#(keys.joined(separator: ","))]}"#
            }, now: { Self.now }, unknownKeyInterval: .zero)
        let signsFirst = JWTKeyCollection(), signsSecond = JWTKeyCollection()
        await signsFirst.add(ecdsa: try ES256PrivateKey(backing: first), kid: JWKIdentifier(string: "k1"))
        await signsSecond.add(ecdsa: try ES256PrivateKey(backing: second), kid: JWKIdentifier(string: "k2"))
        #expect(
            try await verifier.person(in: try await Self.token(Self.claims(), keys: signsFirst, kid: "k1"))
                == "person-1")
        #expect(
            try await verifier.person(in: try await Self.token(Self.claims(), keys: signsFirst, kid: "k1"))
                == "person-1")
        #expect(loads.value.withLock { $0 } == 1)
        // The provider rotates: k2 is published, and the first assertion naming it loads the set again.
        published.value.withLock { $0.append(("k2", second)) }
        #expect(
            try await verifier.person(in: try await Self.token(Self.claims(), keys: signsSecond, kid: "k2"))
                == "person-1")
        #expect(loads.value.withLock { $0 } == 2)
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}

/// A value the test and a loader share.
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

/// A payload of JSON claims as they are, for signing only.
private struct RawClaims: JWTPayload {
    let json: Data

    init(json: Data) { self.json = json }

    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "only signed"))
    }

    func encode(to encoder: any Encoder) throws {
        let object = try JSONDecoder().decode([String: JSONValue].self, from: json)
        var container = encoder.singleValueContainer()
        try container.encode(object)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Any JSON value, to carry the claims through `Encodable`.
private enum JSONValue: Codable {
    case string(String), number(Double), array([JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .array(try container.decode([JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        }
    }
}

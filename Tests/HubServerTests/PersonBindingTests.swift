import _CryptoExtras
import Crypto
import DAO
import Foundation
import HTTPTypes
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import JWTKit
import Mongo
import MongoTestSupport
import Testing

/// A device bound to a person by a signed assertion: PUT and DELETE /device/:deviceID/person against a real hub,
/// with assertions signed here (HS256 with the configured secret; RS256 and ES256 with keys whose JWKS is a file).
@Suite("Devices bound to persons")
struct PersonBindingTests {
    static let secret = "person-assertion-secret-0123456789abcdef"
    static let issuer = "https://sign-in.school.example"
    static let audience = "msi-app"

    /// The hub's person settings: the HS256 secret, or the JWKS file, with the test's issuer and audience.
    static func persons(secret: String? = secret, jwks: String? = nil, claim: String? = nil) throws
        -> PersonConfiguration
    {
        var environment = ["PERSON_ASSERTION_ISSUER": issuer, "PERSON_ASSERTION_AUDIENCE": audience]
        environment["PERSON_ASSERTION_SECRET"] = secret
        environment["PERSON_ASSERTION_JWKS"] = jwks
        environment["PERSON_ASSERTION_CLAIM"] = claim
        return try PersonConfiguration.fromEnvironment(environment)
    }

    @Test func aGoodHS256AssertionBindsTheDeviceAndDeleteUnbindsIt() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let phone = try await hub.register("person-token-a")
            let assertion = try await AssertionSigner.hmac(Self.secret).sign(AssertionSigner.claims(sub: "student-42"))
            let bound = try await hub.bind(phone, assertion)
            #expect(bound.status == .ok)
            #expect(try bound.json()["person"]?.stringValue == "student-42")
            #expect(try bound.json()["device_id"]?.stringValue == phone.deviceID)
            #expect(try await hub.storedPerson(phone) == "student-42")
            let view = try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret))
            #expect(try view.json()["person"]?.stringValue == "student-42")

            // Another person's assertion replaces the first: a device has one person.
            let other = try await AssertionSigner.hmac(Self.secret).sign(AssertionSigner.claims(sub: "student-43"))
            #expect(try await hub.bind(phone, other).status == .ok)
            #expect(try await hub.storedPerson(phone) == "student-43")

            let unbound = try await hub.request(.delete, "/device/\(phone.deviceID)/person", as: .token(phone.secret))
            #expect(unbound.status == .noContent)
            #expect(try await hub.storedPerson(phone) == nil)
            let after = try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret))
            #expect(try after.json()["person"] == nil)
        }
    }

    @Test func everyBadAssertionIs401InvalidAssertionAndChangesNothing() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let phone = try await hub.register("person-token-b")
            let good = await AssertionSigner.hmac(Self.secret)
            #expect(try await hub.bind(phone, try await good.sign(AssertionSigner.claims(sub: "kept"))).status == .ok)
            let now = Date().timeIntervalSince1970
            let cases: [(String, String)] = [
                (
                    "signature",
                    try await AssertionSigner.hmac("another-secret-0123456789abcdef0123")
                        .sign(AssertionSigner.claims(sub: "intruder"))
                ),
                (
                    "issuer",
                    try await good.sign(AssertionSigner.claims(sub: "intruder", iss: "https://elsewhere.example"))
                ),
                ("audience", try await good.sign(AssertionSigner.claims(sub: "intruder", aud: .string("other-app")))),
                ("expired", try await good.sign(AssertionSigner.claims(sub: "intruder", exp: now - 5, iat: now - 60))),
                ("issued", try await good.sign(AssertionSigner.claims(sub: "intruder", iat: now - 11 * 60))),
                (
                    "not before",
                    try await good.sign(
                        AssertionSigner.claims(
                            sub: "intruder",
                            extra: ["nbf": .number(now + 5 * 60)]))
                ),
                ("claim", try await good.sign(AssertionSigner.claims(sub: nil))),
                ("not a JWT", "not-a-jwt"),
            ]
            for (label, assertion) in cases {
                let refused = try await hub.bind(phone, assertion)
                #expect(refused.status == .unauthorized, "\(label)")
                #expect(refused.errorCode == "invalid_assertion", "\(label)")
                #expect(!refused.text.contains(assertion), "\(label): the token is never echoed")
                #expect(try await hub.storedPerson(phone) == "kept", "\(label)")
            }
            // A `nbf` that has come is no reason to refuse.
            let valid = try await good.sign(AssertionSigner.claims(sub: "now-valid", extra: ["nbf": .number(now - 5)]))
            #expect(try await hub.bind(phone, valid).status == .ok)
            #expect(try await hub.storedPerson(phone) == "now-valid")
        }
    }

    @Test func rs256AndES256AssertionsVerifyWithTheKeysOfAJWKSFile() async throws {
        let rsa = try await AssertionSigner.rsa(kid: "rsa-1")
        let ec = try await AssertionSigner.ecdsa(kid: "ec-1")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        try Data(#"{"keys": [\#(rsa.jwk), \#(ec.jwk)]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await HubHarness.with(persons: try Self.persons(secret: nil, jwks: file.path)) { hub in
            let phone = try await hub.register("person-token-c")
            let viaRSA = try await hub.bind(phone, try await rsa.signer.sign(AssertionSigner.claims(sub: "rsa-person")))
            #expect(viaRSA.status == .ok)
            #expect(try await hub.storedPerson(phone) == "rsa-person")
            let viaEC = try await hub.bind(phone, try await ec.signer.sign(AssertionSigner.claims(sub: "ec-person")))
            #expect(viaEC.status == .ok)
            #expect(try await hub.storedPerson(phone) == "ec-person")
            // A key the JWKS does not hold (another RS256 key under the same kid) is refused.
            let stranger = try await AssertionSigner.rsa(kid: "rsa-1")
            let refused = try await hub.bind(
                phone, try await stranger.signer.sign(AssertionSigner.claims(sub: "intruder")))
            #expect(refused.status == .unauthorized && refused.errorCode == "invalid_assertion")
            // An HS256 assertion is refused where no secret is configured.
            let hmac = try await AssertionSigner.hmac(Self.secret).sign(AssertionSigner.claims(sub: "intruder"))
            #expect(try await hub.bind(phone, hmac).errorCode == "invalid_assertion")
            #expect(try await hub.storedPerson(phone) == "ec-person")
        }
    }

    @Test func theConfiguredClaimNamesThePerson() async throws {
        try await HubHarness.with(persons: try Self.persons(claim: "email")) { hub in
            let phone = try await hub.register("person-token-d")
            let signer = await AssertionSigner.hmac(Self.secret)
            let claims = AssertionSigner.claims(sub: "opaque-1", extra: ["email": .string("ann@school.example")])
            let bound = try await hub.bind(phone, try await signer.sign(claims))
            #expect(bound.status == .ok)
            #expect(try await hub.storedPerson(phone) == "ann@school.example")
            // Without the claim, the sub alone does not do.
            let refused = try await hub.bind(phone, try await signer.sign(AssertionSigner.claims(sub: "opaque-2")))
            #expect(refused.status == .unauthorized && refused.errorCode == "invalid_assertion")
        }
    }

    @Test func anUnknownDeviceOrAWrongSecretIs401AsOnTheOtherDeviceRoutes() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let phone = try await hub.register("person-token-e")
            let assertion = try await AssertionSigner.hmac(Self.secret).sign(AssertionSigner.claims(sub: "student-1"))
            let body = #"{"assertion": "\#(assertion)"}"#
            let unknown = try await hub.request(
                .put, "/device/\(ObjectID().hex)/person", as: .token(phone.secret), json: body)
            #expect(unknown.status == .unauthorized && unknown.errorCode == "unauthenticated")
            let wrong = try await hub.request(
                .put, "/device/\(phone.deviceID)/person", as: .token("msd_wrong"), json: body)
            #expect(wrong.status == .unauthorized && wrong.errorCode == "unauthenticated")
            let anonymous = try await hub.request(.delete, "/device/\(phone.deviceID)/person")
            #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthenticated")
            #expect(try await hub.storedPerson(phone) == nil)
        }
    }

    @Test func withNeitherSecretNorJWKSBindingIsRefused() async throws {
        try await HubHarness.with { hub in
            let phone = try await hub.register("person-token-f")
            let assertion = try await AssertionSigner.hmac(Self.secret).sign(AssertionSigner.claims(sub: "student-1"))
            let refused = try await hub.bind(phone, assertion)
            #expect(refused.status == .unauthorized && refused.errorCode == "invalid_assertion")
            #expect(refused.text.contains("not configured"))
            #expect(try await hub.storedPerson(phone) == nil)
        }
    }

    @Test func badPersonSettingsStopStartUpNamingTheVariable() throws {
        let missingIssuer = #expect(throws: ConfigurationError.self) {
            try PersonConfiguration.fromEnvironment([
                "PERSON_ASSERTION_SECRET": Self.secret, "PERSON_ASSERTION_AUDIENCE": "a",
            ])
        }
        #expect(missingIssuer?.description.contains("PERSON_ASSERTION_ISSUER") == true)
        let short = #expect(throws: ConfigurationError.self) {
            try PersonConfiguration.fromEnvironment([
                "PERSON_ASSERTION_SECRET": "too-short", "PERSON_ASSERTION_ISSUER": "i",
                "PERSON_ASSERTION_AUDIENCE": "a",
            ])
        }
        #expect(short?.description.contains("PERSON_ASSERTION_SECRET") == true)
        let scheme = #expect(throws: ConfigurationError.self) {
            try PersonConfiguration.fromEnvironment([
                "PERSON_ASSERTION_JWKS": "http://keys.example/jwks",
                "PERSON_ASSERTION_ISSUER": "i", "PERSON_ASSERTION_AUDIENCE": "a",
            ])
        }
        #expect(scheme?.description.contains("PERSON_ASSERTION_JWKS") == true)
        #expect(HubConfiguration.secretVariables.contains("PERSON_ASSERTION_SECRET"))
    }
}

extension HubHarness {
    /// PUT /device/:id/person with `assertion`, as the phone.
    func bind(_ phone: Phone, _ assertion: String) async throws -> TestResponse {
        try await request(
            .put, "/device/\(phone.deviceID)/person", as: .token(phone.secret),
            json: #"{"assertion": "\#(assertion)"}"#)
    }

    /// The person stored in the phone's device document, if any.
    func storedPerson(_ phone: Phone) async throws -> String? {
        let id = try #require(ObjectID(hex: phone.deviceID))
        let stored = try #require(try await database.collection(CollectionName.devices).findOne(["_id": .objectID(id)]))
        return stored["person"]?.stringValue
    }
}

/// Signs test assertions with jwt-kit: claims as given, keys made here.
struct AssertionSigner: Sendable {
    let keys: JWTKeyCollection
    let kid: String?

    /// A claim value.
    enum Claim: Sendable, Encodable {
        case string(String), number(Double), strings([String])

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .strings(let value): try container.encode(value)
            }
        }
    }

    /// Claims as a JWT payload (only ever signed here).
    struct Claims: JWTPayload {
        var values: [String: Claim]

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(_ values: [String: Claim]) { self.values = values }

        init(from decoder: any Decoder) throws {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "test claims are only signed"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (name, value) in values { try container.encode(value, forKey: Key(stringValue: name)) }
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Good claims for `sub` (nil: none), each overridable.
    static func claims(
        sub: String?, iss: String = PersonBindingTests.issuer,
        aud: Claim = .strings([PersonBindingTests.audience, "another-audience"]),
        exp: Double? = nil, iat: Double? = nil, extra: [String: Claim] = [:]
    ) -> Claims {
        let now = Date().timeIntervalSince1970
        var values: [String: Claim] = [
            "iss": .string(iss), "aud": aud, "exp": .number(exp ?? now + 300),
            "iat": .number(iat ?? now - 5),
        ]
        if let sub { values["sub"] = .string(sub) }
        values.merge(extra) { _, new in new }
        return Claims(values)
    }

    /// An HS256 signer with `secret`.
    static func hmac(_ secret: String) async -> AssertionSigner {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return AssertionSigner(keys: keys, kid: nil)
    }

    /// A new RS256 key, its signer and its public JWK.
    static func rsa(kid: String) async throws -> (signer: AssertionSigner, jwk: String) {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try key.publicKey.getKeyPrimitives()
        let keys = JWTKeyCollection()
        await keys.add(
            rsa: try Insecure.RSA.PrivateKey(pem: key.pemRepresentation), digestAlgorithm: .sha256,
            kid: JWKIdentifier(string: kid))
        let jwk =
            #"{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "\#(kid)", "n": "\#(base64URL(primitives.modulus))", "e": "\#(base64URL(primitives.publicExponent))"}"#
        return (AssertionSigner(keys: keys, kid: kid), jwk)
    }

    /// A new ES256 key, its signer and its public JWK.
    static func ecdsa(kid: String) async throws -> (signer: AssertionSigner, jwk: String) {
        let key = P256.Signing.PrivateKey()
        let point = key.publicKey.x963Representation.dropFirst()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        let jwk =
            #"{"kty": "EC", "alg": "ES256", "use": "sig", "kid": "\#(kid)", "crv": "P-256", "x": "\#(base64URL(point.prefix(32)))", "y": "\#(base64URL(point.suffix(32)))"}"#
        return (AssertionSigner(keys: keys, kid: kid), jwk)
    }

    /// The signed JWT.
    func sign(_ claims: Claims) async throws -> String {
        try await keys.sign(claims, kid: kid.map { JWKIdentifier(string: $0) })
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}

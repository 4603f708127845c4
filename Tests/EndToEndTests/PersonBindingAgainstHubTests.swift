import DAO
import Foundation
import HubCore
import HubServer
import JWTKit
import MSIKit
import Mongo
import Testing

/// MSIKit's `bind(assertion:)` and `unbind()` against a real hub that verifies HS256 assertions.
@Suite("MSIKit binds a device to a person")
struct PersonBindingAgainstHubTests {
    static let secret = "e2e-person-secret-0123456789abcdef0123"

    /// The hub's person settings: HS256 with `secret`.
    static func persons(nonceRequired: Bool = false) -> PersonConfiguration {
        PersonConfiguration(
            assertions: PersonAssertionSettings(
                secret: secret, issuer: "https://sign-in.school.example",
                audience: "msi-app", nonceRequired: nonceRequired))
    }

    /// An HS256 assertion naming `person`, signed with `secret`: a sign-in of its own (its `jti`), so that two
    /// made in the same second are two assertions, as an identity provider's are.
    static func assertion(_ person: String, secret: String = secret, nonce: String? = nil) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let now = Date()
        return try await keys.sign(
            Claims(
                sub: SubjectClaim(value: person), iss: "https://sign-in.school.example",
                aud: AudienceClaim(value: ["msi-app"]),
                exp: ExpirationClaim(value: now.addingTimeInterval(300)),
                iat: IssuedAtClaim(value: now), jti: IDClaim(value: UUID().uuidString),
                nonce: nonce))
    }

    @Test func aPhoneBindsToItsPersonARefusalKeepsTheDeviceAndUnbindLogsOut() async throws {
        try await LiveHub.with(persons: Self.persons()) { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "bind-1")
            try await phone.start()
            let state = try await phone.client.registrationState()
            let assertion = try await Self.assertion("student-7")
            #expect(try await phone.client.bind(assertion: assertion) == "student-7")
            #expect(try await Self.storedPerson(in: hub) == "student-7")
            // Each assertion binds once.
            let replayed = await #expect(throws: MSIKitError.self) { try await phone.client.bind(assertion: assertion) }
            #expect(replayed?.code == .assertionReplayed)

            let refused = await #expect(throws: MSIKitError.self) {
                try await phone.client.bind(
                    assertion: try await Self.assertion("intruder", secret: "not-the-school-secret-0123456789abcdef"))
            }
            #expect(refused?.code == .invalidAssertion)
            // A refused assertion is not a refused device: the same device, still bound to its person.
            #expect(try await phone.client.registrationState() == state)
            #expect(try await Self.storedPerson(in: hub) == "student-7")

            try await phone.client.unbind()
            #expect(try await Self.storedPerson(in: hub) == nil)
        }
    }

    @Test func withNoncesRequiredAPhoneBindsWithItsNonceOnce() async throws {
        try await LiveHub.with(persons: Self.persons(nonceRequired: true)) { hub in
            let phone = try SimulatedPhone(hub: hub.url, fake: hub.fake, token: "bind-nonce-1")
            try await phone.start()
            let missing = await #expect(throws: MSIKitError.self) {
                try await phone.client.bind(assertion: try await Self.assertion("student-8"))
            }
            #expect(missing?.code == .invalidAssertion)
            let nonce = try await phone.client.bindingNonce()
            #expect(nonce.expiresAt > Date().addingTimeInterval(240))
            let assertion = try await Self.assertion("student-8", nonce: nonce.value)
            #expect(try await phone.client.bind(assertion: assertion) == "student-8")
            // Its nonce is used up: presented again, the nonce check refuses it before the replay check would.
            let again = await #expect(throws: MSIKitError.self) { try await phone.client.bind(assertion: assertion) }
            #expect(again?.code == .invalidAssertion)
            #expect(try await Self.storedPerson(in: hub) == "student-8")
        }
    }

    /// The person of the one device in the hub's database.
    static func storedPerson(in hub: LiveHub) async throws -> String? {
        let device = try #require(try await hub.database.collection(CollectionName.devices).findOne([:]))
        return device["person"]?.stringValue
    }
}

/// The claims of a test assertion.
private struct Claims: JWTPayload {
    var sub: SubjectClaim
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var jti: IDClaim
    var nonce: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

import DAO
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// What keeps a captured assertion from binding another phone: each assertion binds once (on every replica: the
/// database remembers it), the device's nonce when the school asks for one, the audit trail of binds and unbinds,
/// and the admin's view of a person's devices.
@Suite("Person assertions bind once")
struct PersonAssertionSafetyTests {
    static func persons(nonce: String? = nil) throws -> PersonConfiguration {
        var environment = [
            "PERSON_ASSERTION_ISSUER": PersonBindingTests.issuer,
            "PERSON_ASSERTION_AUDIENCE": PersonBindingTests.audience,
            "PERSON_ASSERTION_SECRET": PersonBindingTests.secret,
        ]
        environment["PERSON_ASSERTION_NONCE"] = nonce
        return try PersonConfiguration.fromEnvironment(environment)
    }

    static func sign(sub: String, extra: [String: AssertionSigner.Claim] = [:]) async throws -> String {
        try await AssertionSigner.hmac(PersonBindingTests.secret).sign(AssertionSigner.claims(sub: sub, extra: extra))
    }

    @Test func aReplayedAssertionIs401OnAnotherDeviceAndOnTheSameOne() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let first = try await hub.register("replay-token-a"), second = try await hub.register("replay-token-b")
            // With a jti, and without one (then its signed header and claims are what is remembered).
            for (label, assertion) in [
                ("jti", try await Self.sign(sub: "student-1", extra: ["jti": .string(UUID().uuidString)])),
                ("no jti", try await Self.sign(sub: "student-2")),
            ] {
                #expect(try await hub.bind(first, assertion).status == .ok, "\(label)")
                let replayed = try await hub.bind(second, assertion)
                #expect(replayed.status == .unauthorized, "\(label)")
                #expect(replayed.errorCode == "assertion_replayed", "\(label)")
                #expect(!replayed.text.contains(assertion), "\(label)")
                #expect(try await hub.storedPerson(second) == nil, "\(label)")
                #expect(try await hub.bind(first, assertion).errorCode == "assertion_replayed", "\(label)")
            }
            // The database keeps hashes until the assertions expire, never the assertions.
            let used = try await hub.database.collection(CollectionName.usedAssertions).find([:])
            #expect(used.count == 2)
            for document in used {
                #expect(document["_id"]?.stringValue?.count == 64)
                guard case .datetime = document["expire_at"] else {
                    Issue.record("expire_at is not a date: TTL indexes expire dates only")
                    continue
                }
            }
            // A fresh assertion for the same person binds the second phone.
            #expect(try await hub.bind(second, try await Self.sign(sub: "student-1")).status == .ok)
            #expect(try await hub.storedPerson(second) == "student-1")
        }
    }

    @Test func withNoncesRequiredOnlyTheDevicesCurrentNonceBindsAndOnlyOnce() async throws {
        try await HubHarness.with(persons: try Self.persons(nonce: "required")) { hub in
            let phone = try await hub.register("nonce-token-a"), other = try await hub.register("nonce-token-b")
            let missing = try await hub.bind(phone, try await Self.sign(sub: "student-1"))
            #expect(missing.status == .unauthorized && missing.errorCode == "invalid_assertion")
            #expect(missing.text.contains("nonce"))

            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let issued = try await hub.request(
                .post, "/device/\(phone.deviceID)/person/nonce", as: .token(phone.secret))
            #expect(issued.status == .ok)
            let body = try issued.json()
            #expect(body.keys.sorted() == ["expires_at", "nonce"])
            let nonce = try #require(body["nonce"]?.stringValue)
            let expiresAt = try #require(body["expires_at"]?.int64Value)
            #expect(nonce.count == 43)
            #expect((before + 299_000...before + 302_000).contains(expiresAt))
            // Stored hashed: the nonce itself is nowhere in the device's document.
            let id = try #require(ObjectID(hex: phone.deviceID))
            let stored = try #require(
                try await hub.database.collection(CollectionName.devices).findOne(["_id": .objectID(id)]))
            #expect(!stored.extendedJSON(.relaxed).contains(nonce))

            let wrong = try await hub.bind(
                phone, try await Self.sign(sub: "student-1", extra: ["nonce": .string("not-the-nonce")]))
            #expect(wrong.status == .unauthorized && wrong.errorCode == "invalid_assertion")
            // Another device's nonce is not this one's.
            let elsewhere = try await hub.bind(
                other, try await Self.sign(sub: "student-1", extra: ["nonce": .string(nonce)]))
            #expect(elsewhere.status == .unauthorized && elsewhere.errorCode == "invalid_assertion")
            #expect(try await hub.storedPerson(phone) == nil)
            #expect(try await hub.storedPerson(other) == nil)

            let right = try await hub.bind(
                phone, try await Self.sign(sub: "student-1", extra: ["nonce": .string(nonce)]))
            #expect(right.status == .ok)
            #expect(try await hub.storedPerson(phone) == "student-1")
            // Used: a second assertion carrying it is refused.
            let again = try await hub.bind(
                phone, try await Self.sign(sub: "student-9", extra: ["nonce": .string(nonce)]))
            #expect(again.status == .unauthorized && again.errorCode == "invalid_assertion")
            #expect(try await hub.storedPerson(phone) == "student-1")

            let anonymous = try await hub.request(.post, "/device/\(phone.deviceID)/person/nonce")
            #expect(anonymous.status == .unauthorized && anonymous.errorCode == "unauthenticated")
        }
    }

    @Test func badNonceSettingsStopStartUp() throws {
        let error = #expect(throws: ConfigurationError.self) { try Self.persons(nonce: "sometimes") }
        #expect(error?.description.contains("PERSON_ASSERTION_NONCE") == true)
        #expect(try Self.persons(nonce: "off").assertions.nonceRequired == false)
        #expect(try Self.persons().assertions.nonceRequired == false)
        #expect(try Self.persons(nonce: "required").assertions.nonceRequired)
    }

    @Test func bindsAndUnbindsAreAuditedWithDeviceAndPersonOnly() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let phone = try await hub.register("audit-token-a")
            let assertion = try await Self.sign(sub: "student-5")
            #expect(try await hub.bind(phone, assertion).status == .ok)
            #expect(
                try await hub.request(.delete, "/device/\(phone.deviceID)/person", as: .token(phone.secret)).status
                    == .noContent)
            // Unbinding a device with no person records nothing.
            #expect(
                try await hub.request(.delete, "/device/\(phone.deviceID)/person", as: .token(phone.secret)).status
                    == .noContent)
            let entries = try await AuditTests.entries(hub.database)
            let bind = try #require(AuditTests.entry(entries, "device.bind"))
            #expect(bind["actor"] == ["kind": "device", "name": .string(phone.deviceID)])
            #expect(bind["target"] == ["kind": "device", "id": .string(phone.deviceID)])
            #expect(bind[path: "change.after.person"] == "student-5")
            let unbinds = entries.filter { $0["action"]?.stringValue == "device.unbind" }
            #expect(unbinds.count == 1)
            #expect(unbinds.first?[path: "change.before.person"] == "student-5")
            let text = entries.map { $0.extendedJSON(.relaxed) }.joined()
            #expect(!text.contains(assertion) && !text.contains(phone.secret) && !text.contains("audit-token-a"))
            // As stored, the person and the device are named by their pseudonyms only, with their ids sealed.
            let stored = try await AuditTests.storedEntries(hub.database).filter {
                $0["action"]?.stringValue?.hasPrefix("device.") == true
            }
            let storedText = stored.map { $0.extendedJSON(.relaxed) }.joined()
            #expect(stored.count == 2 && !storedText.contains("student-5") && !storedText.contains(phone.deviceID))
            #expect(stored.allSatisfy { ($0["subjects"]?.arrayValue?.count ?? 0) == 2 })
        }
    }

    @Test func anAdminListsAPersonsDevicesAndUnbindsOne() async throws {
        try await HubHarness.with(persons: try Self.persons()) { hub in
            let first = try await hub.register("admin-token-a"), second = try await hub.register("admin-token-b")
            let stranger = try await hub.register("admin-token-c")
            #expect(try await hub.bind(first, try await Self.sign(sub: "ann@school.example")).status == .ok)
            #expect(try await hub.bind(second, try await Self.sign(sub: "ann@school.example")).status == .ok)
            #expect(try await hub.bind(stranger, try await Self.sign(sub: "ben@school.example")).status == .ok)
            let path = "/person/ann%40school.example/devices"

            let listed = try await hub.request(.get, path, as: .admin)
            #expect(listed.status == .ok)
            let devices = try #require(try listed.json()["devices"]?.arrayValue?.compactMap(\.documentValue))
            #expect(Set(devices.compactMap { $0["device_id"]?.stringValue }) == [first.deviceID, second.deviceID])
            for device in devices {
                #expect(device.keys.sorted() == ["created_at", "device_id", "platform", "state", "updated_at"])
            }
            #expect(!listed.text.contains("admin-token-") && !listed.text.contains("msd_"))
            #expect(try await hub.request(.get, "/person/nobody/devices", as: .admin).json()["devices"] == [])
            #expect(try await hub.request(.get, path, as: .communicator).status == .forbidden)
            #expect(try await hub.request(.get, path).status == .unauthorized)
            let tooLong = "/person/\(String(repeating: "p", count: 257))/devices"
            let refused = try await hub.request(.get, tooLong, as: .admin)
            #expect(refused.status == .unprocessableContent && refused.errorCode == "invalid_id")

            // Not the admin's: a communicator cannot unbind; the stranger's device is not ann's.
            let device = "/person/ann%40school.example/devices/\(first.deviceID)"
            #expect(try await hub.request(.delete, device, as: .communicator).status == .forbidden)
            let notHers = try await hub.request(
                .delete, "/person/ann%40school.example/devices/\(stranger.deviceID)",
                as: .admin)
            #expect(notHers.status == .notFound && notHers.errorCode == "device_not_found")
            #expect(try await hub.storedPerson(stranger) == "ben@school.example")
            #expect(
                try await hub.request(.delete, "/person/ann%40school.example/devices/nope", as: .admin).status
                    == .badRequest)

            #expect(try await hub.request(.delete, device, as: .admin).status == .noContent)
            #expect(try await hub.storedPerson(first) == nil)
            #expect(try await hub.request(.delete, device, as: .admin).errorCode == "device_not_found")
            let after = try await hub.request(.get, path, as: .admin).json()["devices"]?.arrayValue
            #expect(after?.compactMap { $0.documentValue?["device_id"]?.stringValue } == [second.deviceID])

            let unbind = try #require(AuditTests.entry(try await AuditTests.entries(hub.database), "device.unbind"))
            #expect(unbind["actor"] == ["kind": "token", "name": "admin-script"])
            #expect(unbind["target"] == ["kind": "device", "id": .string(first.deviceID)])
            #expect(unbind[path: "change.before.person"] == "ann@school.example")
        }
    }
}

import DAO
import Logging
import Mongo

extension DeviceService {
    /// How long a person nonce (`personNonce(for:)`) may be used: 5 minutes.
    public static let personNonceLifetimeMS: Int64 = 5 * 60 * 1000

    /// A new nonce for `device`'s next assertion, and when it expires (Unix ms): random, stored hashed on the device
    /// (replacing the one it had), good for one bind within `personNonceLifetimeMS`. Needed when
    /// `PERSON_ASSERTION_NONCE=required`: the school's sign-in puts it in the assertion's `nonce` claim.
    /// - Throws: `DAOError` (`.deviceNotFound` when the device went meanwhile).
    public func personNonce(for device: Device) async throws -> (nonce: String, expiresAt: Int64) {
        let nonce = Secret.make()
        let expiresAt = now() + Self.personNonceLifetimeMS
        try await devices.setPersonNonce(device.id, hash: Secret.hash(nonce), expiresAt: expiresAt)
        return (nonce, expiresAt)
    }

    /// Binds `device` to the person a verified `assertion` names (replacing the one it had): the hub keeps the
    /// person id and nothing else of the assertion. An assertion binds once, on every replica: it is remembered (by
    /// a hash of its `jti`, or of its signed part) until it expires. With `PERSON_ASSERTION_NONCE=required` its
    /// `nonce` claim must be the device's current nonce, which it uses up. Recorded in the audit log as
    /// `device.bind` (the device and the person, nothing of the assertion). Nothing changes when it is refused.
    /// - Throws: `AssertionRefusal` (`.notConfigured`, `.invalidAssertion` (a missing or wrong nonce too),
    ///   `.replayed`); `DAOError`.
    public func bind(_ device: Device, assertion: String) async throws -> Device {
        let verified = try await personAssertions.verify(assertion)
        if personAssertions.nonceRequired {
            guard let nonce = verified.nonce, (1...256).contains(nonce.utf8.count) else {
                throw AssertionRefusal(
                    .invalidAssertion,
                    "the assertion carries no nonce claim; ask POST /device/:deviceID/person/nonce for one")
            }
            guard try await devices.takePersonNonce(device.id, hash: Secret.hash(nonce), now: now()) else {
                throw AssertionRefusal(
                    .invalidAssertion,
                    "the assertion's nonce is not this device's current one (another, used or expired)")
            }
        }
        guard try await usedAssertions.record(verified.replayKey, until: verified.expiresAt) else {
            logger.notice(
                "a person assertion that bound a device already was presented again",
                metadata: ["device": .string(device.id.hex)])
            throw AssertionRefusal(.replayed, "this assertion has bound a device already; each assertion binds once")
        }
        let bound = try await devices.bind(device.id, person: verified.person)
        await audit.record(
            actor: AuditActor(kind: .device, name: device.id.hex), action: "device.bind",
            target: AuditTarget(kind: "device", id: device.id.hex),
            change: AuditChange.edit(
                before: Self.personField(device.person),
                after: Self.personField(verified.person)))
        // The person's quiet hours and locale come with them to the new device. The binding stands whatever happens
        // here (its assertion is spent): a failure is logged, and the person's next change of settings gives them.
        do {
            let settings = try await personSettings.settings(of: verified.person)
            try await holdSubjects(settings.delivery[.subject] ?? [:], on: bound)
            return try await followPersonSettings(bound, settings)
        } catch {
            logger.warning(
                "a bound device did not get its person's settings yet",
                metadata: ["device": .string(device.id.hex), "error": .string("\(error)")])
            return bound
        }
    }

    /// Unbinds `device` from its person (logout), recorded in the audit log as `device.unbind`; a device with none
    /// stays as it is.
    /// - Throws: `DAOError`.
    public func unbind(_ device: Device) async throws {
        guard try await devices.unbind(device.id, fromPerson: nil) else { return }
        try await releaseHeldSubjects(of: device)
        await audit.record(
            actor: AuditActor(kind: .device, name: device.id.hex), action: "device.unbind",
            target: AuditTarget(kind: "device", id: device.id.hex),
            change: AuditChange.deleted(Self.personField(device.person)))
    }

    /// Takes an unbound `device` out of the held topics its person's choices put it in: it gets every subject's
    /// notifications again.
    /// - Throws: `DAOError`.
    func releaseHeldSubjects(of device: Device) async throws {
        let held = try await subscriptions.wanted(by: device).map(\.topic).filter {
            $0.hasPrefix(ServerOwnedTopic.heldPrefix)
        }
        guard !held.isEmpty else { return }
        try await subscriptions.set(want: false, topics: held, for: device)
        reconcilerSignal.notify()
    }

    /// The devices among `ids` that still exist.
    /// - Throws: `DAOError`.
    func devices(ids: [ObjectID]) async throws -> [Device] {
        Array(try await devices.devices(ids: ids).values)
    }

    /// The devices bound to `person`, oldest first, for an admin (the views never hold a registration or secret).
    /// - Throws: `DAOError`.
    public func devices(ofPerson person: String) async throws -> [Device] {
        try await devices.devices(ofPerson: person)
    }

    /// Unbinds device `id` from `person` for an admin (a lost phone, a shared tablet), recorded in the audit log as
    /// `device.unbind` by the admin.
    /// - Throws: `DAOError` `.deviceNotFound` when no device with the id is bound to the person.
    public func unbind(_ id: ObjectID, fromPerson person: String) async throws {
        guard try await devices.unbind(id, fromPerson: person) else {
            throw DAOError(.deviceNotFound, "no device with the id \(id.hex) is bound to this person")
        }
        try await releaseHeldSubjects(of: try await devices.get(id))
        await audit.record(
            action: "device.unbind", target: AuditTarget(kind: "device", id: id.hex),
            change: AuditChange.deleted(Self.personField(person)))
    }

    /// A device as an admin's list of a person's devices shows it: id, platform, state, when it was created and last
    /// registered again or changed (Unix ms); never its registration or secret.
    public func personView(_ device: Device) -> BSONDocument {
        [
            "device_id": .string(device.id.hex), "platform": .string(device.platform.rawValue),
            "state": .string(device.state.rawValue), "created_at": .int64(device.createdAt),
            "updated_at": .int64(device.updatedAt),
        ]
    }

    /// `{"person": id}`, or nothing without one: what the audit log keeps of a bind.
    private static func personField(_ person: String?) -> BSONDocument {
        person.map { ["person": .string($0)] } ?? [:]
    }
}

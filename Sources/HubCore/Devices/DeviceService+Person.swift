import DAO

extension DeviceService {
    /// Binds `device` to the person a verified `assertion` names (replacing the one it had): the hub keeps the
    /// person id and nothing else of the assertion. Nothing changes when it does not verify.
    /// - Throws: `AssertionRefusal` (`.notConfigured`, `.invalidAssertion`); `DAOError`.
    public func bind(_ device: Device, assertion: String) async throws -> Device {
        let person = try await personAssertions.person(in: assertion)
        return try await devices.bind(device.id, person: person)
    }

    /// Unbinds `device` from its person (logout); a device with none stays as it is.
    /// - Throws: `DAOError`.
    public func unbind(_ device: Device) async throws {
        _ = try await devices.unbind(device.id)
    }
}

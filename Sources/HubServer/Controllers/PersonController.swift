import DAO
import HubCore
import Hummingbird
import Mongo

/// A person's devices, for admins: which phones are bound to a person, and unbinding one (a lost phone, a shared
/// tablet handed on). Persons are the school sign-in's ids; the hub stores nothing else of them.
struct PersonController {
    let services: HubServices

    /// Every route on `admins`, the group of admin-only routes.
    func addRoutes(to admins: RouterGroup<HubRequestContext>) {
        admins.get("/person/:personID/devices", use: devices)
        admins.delete("/person/:personID/devices/:deviceID", use: unbind)
    }

    /// GET /person/:personID/devices → 200 `{"devices": [{"device_id", "platform", "state", "created_at",
    /// "updated_at"}]}`, oldest first (empty for a person with none); never a registration or secret.
    @Sendable func devices(request: Request, context: HubRequestContext) async throws -> Response {
        let devices = try await services.devices.devices(ofPerson: try Self.personID(context))
        return JSONResponse.make(["devices": .array(devices.map { .document(services.devices.personView($0)) })])
    }

    /// DELETE /person/:personID/devices/:deviceID: unbinds the device from the person (204; recorded in the audit
    /// log as `device.unbind`); 404 `device_not_found` when no such device is bound to them.
    @Sendable func unbind(request: Request, context: HubRequestContext) async throws -> Response {
        let person = try Self.personID(context)
        try await services.devices.unbind(try context.parameters.objectID("deviceID"), fromPerson: person)
        return Response(status: .noContent)
    }

    /// The path's person id, percent-decoded.
    /// - Throws: `HubError` 422 `invalid_id` for bad encoding or a length outside 1 to 256 characters.
    static func personID(_ context: HubRequestContext) throws -> String {
        let person = try GroupController.personID(context)
        guard (1...PersonAssertionVerifier.maximumPersonLength).contains(person.count) else {
            throw HubError.invalid(
                .invalidID,
                "personID: a person id has 1 to \(PersonAssertionVerifier.maximumPersonLength) characters")
        }
        return person
    }
}

import DAO
import Foundation
import HubCore
import Hummingbird
import Mongo

/// The admin page of a person: their devices and the preferences they set on them (quiet hours, language, digest
/// hour, each subject's and group's delivery), their next and last digest. Read only: a person's settings are theirs
/// to change, from their devices (`PUT /device/:deviceID/person/settings`).
struct PersonsAdminController {
    let services: HubServices
    let pages: PortalPages
    /// The school's clock, on which the digests' times are shown.
    let school: SchoolTime

    /// The page on `admins`, the group of admins under /portal/admin.
    func addRoutes(to admins: RouterGroup<PortalRequestContext>) {
        admins.get("/persons", use: person)
    }

    /// GET /portal/admin/persons?id=: the form that looks a person up, and with `id` the person's page.
    @Sendable func person(request: Request, context: PortalRequestContext) async throws -> Response {
        guard let id = request.uri.queryParameters.get("id").map({ String($0) }), !id.isEmpty else {
            return pages.render("admin-person", context.page("Persons", ["looked": false]))
        }
        if let problem = GroupService.personIDProblem(id) {
            return pages.render(
                "admin-person",
                context.page("Persons", ["looked": false, "id": id, "error": problem]),
                status: .unprocessableContent)
        }
        let (settings, digest) = try await services.devices.preferences(ofPerson: id)
        let devices = try await services.devices.devices(ofPerson: id)
        var choices: [[String: Any]] = []
        for (scope, modes) in settings.delivery.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            for (key, mode) in modes.sorted(by: { $0.key < $1.key }) {
                choices.append([
                    "kind": scope == .subject ? "Subject" : "Group", "name": try await name(of: scope, key),
                    "key": key, "mode": mode.rawValue,
                ])
            }
        }
        let policy = services.digestPolicy
        let data: [String: Any] = [
            "looked": true, "id": id,
            "quietHours": settings.quietHours.map { "\($0.fromText)–\($0.toText) (\($0.timeZoneID))" } ?? "",
            "locale": settings.locale ?? "",
            "digestHour": "\(policy.hour(of: settings)) (\(policy.zone(of: settings).identifier))"
                + (settings.digestHour == nil ? ", the school's" : ""),
            "choices": choices, "hasChoices": !choices.isEmpty,
            "nextDigest": digest.map { school.text($0.dueAt) } ?? "",
            "lastDigest": digest?.last.map { "\(school.text($0.at)): \($0.summary)" } ?? "",
            "devices": devices.map { device in
                [
                    "id": device.id.hex, "platform": device.platform.rawValue, "state": device.state.rawValue,
                    "created": school.text(device.createdAt),
                ]
            },
            "hasDevices": !devices.isEmpty,
        ]
        return pages.render("admin-person", context.page("Person \(id)", data))
    }

    /// A subject's or group's name as the page shows it; its id when it is gone.
    private func name(of scope: DeliveryScope, _ key: String) async throws -> String {
        switch scope {
        case .subject:
            return (try? await services.cube.location(topicKey: key).subject.name) ?? key
        case .group:
            return (try? await services.groups.group(id: key).name) ?? key
        }
    }
}

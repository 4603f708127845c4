import DAO
import Mongo

/// Resolves a message to persons and groups into its deliveries, once: the persons named and the members of the
/// groups named (a person reached both ways counts once, as named), then every active device bound to one of them,
/// inserted as pending deliveries (idempotent by `_id`), and the resolution noted on the message under its lease.
struct FanOutResolver: Sendable {
    let stores: FanOutStores

    /// Whether `message` has been resolved already (`relay.components.devices.resolved`).
    static func isResolved(_ message: Message) -> Bool {
        message.document[path: "relay.components.devices.resolved"]?.boolValue == true
    }

    /// Stores `message`'s deliveries and notes it resolved while `lease` holds it; returns how many devices it
    /// reaches, or nil when the lease no longer holds the message (the deliveries stay: a later resolution keeps them).
    /// - Throws: `DAOError`.
    func resolve(_ message: Message, recipients: Recipients, lease: String) async throws -> Int? {
        // Each person once: named first, then through the first group (in the order given) they are a member of.
        var groupOf: [String: String?] = [:]
        var persons: [String] = []
        for person in recipients.persons where groupOf[person] == nil {
            groupOf[person] = .some(nil)
            persons.append(person)
        }
        for (person, group) in try await stores.groups.members(ofGroups: recipients.groups) where groupOf[person] == nil {
            groupOf[person] = .some(group)
            persons.append(person)
        }
        let devices = try await stores.devices.active(ofPersons: persons)
        let deliveries = devices.compactMap { device -> Delivery? in
            guard let person = device.person, let group = groupOf[person] else { return nil }
            return Delivery(message: message.id, device: device.id, person: person, group: group,
                            platform: device.platform, registration: device.registration)
        }
        try await stores.deliveries.insert(deliveries)
        guard try await stores.deliveries.markResolved(message: message.id, lease: lease, count: deliveries.count) else {
            return nil
        }
        return deliveries.count
    }
}

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

    /// Whether a resolution of `message` began in an earlier attempt (`relay.components.devices.resolving`): some of
    /// its deliveries may have been sent already.
    static func isStarted(_ message: Message) -> Bool {
        message.document[path: "relay.components.devices.resolving"]?.boolValue == true
    }

    /// How many persons' devices are looked up and stored before they are handed on to be sent.
    static let personsPerBatch = 1_024

    /// Stores `message`'s deliveries, handing each batch to `stored` once it is stored (all pending: sends may start
    /// before the rest is resolved, and resolving again stores only what is missing), then notes the message
    /// resolved while `lease` holds it. Returns how many devices it reaches, or nil when the lease no longer holds the
    /// message (the deliveries stay: a later resolution keeps them).
    /// - Throws: `DAOError`; `CancellationError` when the task is cancelled.
    func resolve(_ message: Message, recipients: Recipients, lease: String,
                 stored: ([Delivery]) -> Void = { _ in }) async throws -> Int? {
        // Each person once: named first, then through the first group (in the order given) they are a member of.
        var groupOf: [String: String?] = [:]
        var persons: [String] = []
        for person in recipients.persons where groupOf[person] == nil {
            groupOf[person] = .some(nil)
            persons.append(person)
        }
        let members = try await stores.groups.members(ofGroups: recipients.groups)
        for (person, group) in members where groupOf[person] == nil {
            groupOf[person] = .some(group)
            persons.append(person)
        }
        var count = 0
        for start in stride(from: 0, to: persons.count, by: Self.personsPerBatch) {
            try Task.checkCancellation()
            let slice = Array(persons[start..<min(start + Self.personsPerBatch, persons.count)])
            let deliveries = try await stores.devices.active(ofPersons: slice).compactMap { device -> Delivery? in
                guard let person = device.person, let group = groupOf[person] else { return nil }
                return Delivery(message: message.id, device: device.id, person: person, group: group,
                                platform: device.platform, registration: device.registration)
            }
            guard !deliveries.isEmpty else { continue }
            try await stores.deliveries.insert(deliveries)
            stored(deliveries)
            count += deliveries.count
        }
        guard try await stores.deliveries.markResolved(message: message.id, lease: lease, count: count) else {
            return nil
        }
        return count
    }
}

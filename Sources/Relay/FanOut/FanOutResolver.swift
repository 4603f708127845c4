import DAO
import Mongo

/// Resolves a message to persons and groups into its deliveries, at every attempt: the persons named and the
/// members of the groups named (a person reached both ways counts once, as named), then every active device bound to
/// one of them, handed on a batch at a time to be sent. Nothing is written per device before its answer: an attempt
/// after one that may have sent (`isStarted`) leaves out the devices answered already.
struct FanOutResolver: Sendable {
    let stores: FanOutStores

    /// Whether a resolution of `message` began in an earlier attempt (`relay.components.devices.resolving`): some of
    /// its devices may have been sent to, and answered.
    static func isStarted(_ message: Message) -> Bool {
        message.document[path: "relay.components.devices.resolving"]?.boolValue == true
    }

    /// How many persons' devices are looked up before they are handed on to be sent.
    static let personsPerBatch = 1_024

    /// Finds `message`'s devices, handing each batch to `found` (without the devices answered already when
    /// `leavingOutAnswered`), then notes on the message, while `lease` holds it, how many devices it reaches. Returns
    /// that count, or nil when the lease no longer holds the message.
    /// - Throws: `DAOError`; `CancellationError` when the task is cancelled.
    func resolve(_ message: Message, recipients: Recipients, lease: String, leavingOutAnswered: Bool,
                 found: ([Delivery]) -> Void) async throws -> Int? {
        // Each person once: named first, then through the first group (in the order given) they are a member of.
        // A batch's devices are sent while the next batch's are looked up.
        var seen: Set<String> = []
        var waiting: [(person: String, group: String?)] = []
        var count = 0
        func flush() async throws {
            try Task.checkCancellation()
            let groupOf = Dictionary(waiting.map { ($0.person, $0.group) }, uniquingKeysWith: { first, _ in first })
            waiting = []
            var deliveries = try await stores.devices.active(ofPersons: Array(groupOf.keys)).compactMap {
                device -> Delivery? in
                guard let person = device.person, let group = groupOf[person] else { return nil }
                return Delivery(message: message.id, device: device.id, person: person, group: group,
                                platform: device.platform, registration: device.registration)
            }
            count += deliveries.count
            if leavingOutAnswered, !deliveries.isEmpty {
                let answered = try await stores.deliveries.answered(deliveries.map(\.id))
                deliveries.removeAll { answered.contains($0.id) }
            }
            if !deliveries.isEmpty { found(deliveries) }
        }
        for person in recipients.persons where seen.insert(person).inserted {
            waiting.append((person, nil))
            if waiting.count >= Self.personsPerBatch { try await flush() }
        }
        for group in recipients.groups {
            for person in try await stores.groups.allMembers(of: group) where seen.insert(person).inserted {
                waiting.append((person, group))
                if waiting.count >= Self.personsPerBatch { try await flush() }
            }
        }
        if !waiting.isEmpty { try await flush() }
        guard try await stores.deliveries.markResolved(message: message.id, lease: lease, count: count) else {
            return nil
        }
        return count
    }
}

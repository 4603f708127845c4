import Mongo
import HubModel
import Synchronization

/// Which webhooks subscribe to which events, as this process last read them (at most `maximumAge` ago), so that an
/// event nobody subscribes to costs no write: a topic message sent while no webhook exists pays one read every
/// `maximumAge`, not one per message.
///
/// One per hub (`HubServices` makes it and hands it to every `WebhookDAO` and `WebhookEventDAO` it builds): the DAO that
/// creates or deletes a webhook drops what was read at once, so this hub's next event sees the change; other replicas
/// see it within `maximumAge`. It also carries the wake signal of the hub's webhook worker, told when an event is
/// emitted.
public final class WebhookSubscribers: Sendable {
    /// How long a read of the subscriptions serves.
    public static let maximumAge: Int64 = 2_000

    private struct Loaded {
        var at: Int64
        var subscriptions: [(id: ObjectID, events: Set<String>)]
    }

    private let loaded = Mutex<Loaded?>(nil)
    /// Moves on at each `invalidate()`, so that a read begun before a change is not kept after it.
    private let generation = Atomic<Int>(0)
    /// Wakes this process's webhook worker when an event is emitted (only a hint: the worker also polls).
    public let wake = WakeSignal()

    public init() {}

    /// Forgets what was read, so that the next question reads the database.
    func invalidate() {
        generation.add(1, ordering: .sequentiallyConsistent)
        loaded.withLock { $0 = nil }
    }

    /// The ids of the webhooks subscribed to `event` at `now`, read through `webhooks` when the last read is too old.
    /// - Throws: `DAOError`.
    func subscribed(to event: WebhookEvent, now: Int64, webhooks: WebhookDAO) async throws -> [ObjectID] {
        let cached = loaded.withLock { loaded -> [(id: ObjectID, events: Set<String>)]? in
            guard let loaded, now - loaded.at < Self.maximumAge, now >= loaded.at else { return nil }
            return loaded.subscriptions
        }
        let subscriptions: [(id: ObjectID, events: Set<String>)]
        if let cached {
            subscriptions = cached
        } else {
            let before = generation.load(ordering: .sequentiallyConsistent)
            subscriptions = try await webhooks.subscriptions()
            loaded.withLock { loaded in
                if generation.load(ordering: .sequentiallyConsistent) == before {
                    loaded = Loaded(at: now, subscriptions: subscriptions)
                }
            }
        }
        return subscriptions.filter { $0.events.contains(event.rawValue) }.map(\.id)
    }
}

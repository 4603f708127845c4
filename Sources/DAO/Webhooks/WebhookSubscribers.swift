import Mongo
import Synchronization

/// Which webhooks subscribe to which events, as this process last read them (at most `maximumAge` ago), so that an
/// event nobody subscribes to costs no write: a topic message sent while no webhook exists pays one read every
/// `maximumAge`, not one per message.
///
/// One per database in a process (`shared(for:)`): the `WebhookDAO` that creates or deletes a webhook drops it at once,
/// so this process's next event sees the change; other replicas see it within `maximumAge`. It also carries the wake
/// signal of the process's webhook worker, told when an event is emitted.
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

    private init() {}

    private static let registry = Mutex<[String: WebhookSubscribers]>([:])

    /// The process's one instance for `database` (by name).
    static func shared(for database: MongoDatabase) -> WebhookSubscribers {
        registry.withLock { registry in
            if let existing = registry[database.name] { return existing }
            let made = WebhookSubscribers()
            registry[database.name] = made
            return made
        }
    }

    /// The process's wake signal for the webhook worker of `database`.
    public static func wake(for database: MongoDatabase) -> WakeSignal { shared(for: database).wake }

    /// Forgets what was read, so that the next question reads the database.
    func invalidate() {
        generation.add(1, ordering: .sequentiallyConsistent)
        loaded.withLock { $0 = nil }
    }

    /// The ids of the webhooks subscribed to `event` at `now`, read through `webhooks` when the last read is too old.
    /// - Throws: `DAOError`.
    func subscribed(to event: String, now: Int64, webhooks: WebhookDAO) async throws -> [ObjectID] {
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
        return subscriptions.filter { $0.events.contains(event) }.map(\.id)
    }
}

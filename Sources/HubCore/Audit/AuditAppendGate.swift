import Mongo
import Synchronization

/// Lets one audit append at a time through in this process, first come first served, so that the services of one
/// process never race each other for the next `seq` (replicas still may: the unique index settles those). It holds
/// no state of the chain: the head is read from the database on every append.
public actor AuditAppendGate {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A gate of its own (a test standing in for another process); the services use `shared(for:)`.
    public init() {}

    /// Waits for the turn.
    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives the turn to the next in line.
    func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Runs `body` in turn.
    func inTurn<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private static let registry = Mutex<[String: AuditAppendGate]>([:])

    /// The process's one gate for `database` (by name).
    static func shared(for database: MongoDatabase) -> AuditAppendGate {
        registry.withLock { registry in
            if let existing = registry[database.name] { return existing }
            let made = AuditAppendGate()
            registry[database.name] = made
            return made
        }
    }
}

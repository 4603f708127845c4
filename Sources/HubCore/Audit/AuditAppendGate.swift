import DAO
import Mongo
import Synchronization

/// Appends this process's audit entries to the chain in batches, first come first served: while one batch is being
/// written, the entries recorded meanwhile wait and go together in the next (one ordered insert), so that the
/// services of one process never race each other for the next `seq` and a busy hub pays one write for many entries.
/// Replicas still may race: the unique index on `seq` settles those.
///
/// It keeps the last head it wrote or read as a hint, so that an append does not read the head every time; the hint
/// is only a guess the unique index checks (a replica that appended meanwhile makes the insert fail, and the head is
/// read again from the hint on): the chain's state is in the database alone.
public actor AuditAppendGate {
    /// Where the chain's head was last seen by this process.
    public struct Head: Sendable, Equatable {
        public var seq: Int64
        public var hash: String
    }

    /// Writes a batch after `hint` and answers the entries stored, in order (`AuditLog.write`).
    typealias Writer = @Sendable ([AuditLog.Draft], Head?) async throws -> [AuditEntry]

    private struct Waiting {
        var draft: AuditLog.Draft
        var continuation: CheckedContinuation<AuditEntry, any Error>
    }

    private var waiting: [Waiting] = []
    private var writing = false
    private var hint: Head?

    /// The most entries one batch writes.
    static let maximumBatch = 500

    /// A gate of its own (a test standing in for another process); the services use `shared(for:)`.
    public init() {}

    /// Queues `draft` and answers its entry once a batch stored it; `write` writes the batches while this process
    /// has entries waiting.
    func append(_ draft: AuditLog.Draft, write: @escaping Writer) async throws -> AuditEntry {
        try await withCheckedThrowingContinuation { continuation in
            waiting.append(Waiting(draft: draft, continuation: continuation))
            guard !writing else { return }
            writing = true
            Task { await drain(write) }
        }
    }

    /// Writes what waits, a batch at a time, until nothing does.
    private func drain(_ write: Writer) async {
        while !waiting.isEmpty {
            let batch = Array(waiting.prefix(Self.maximumBatch))
            waiting.removeFirst(batch.count)
            do {
                let stored = try await write(batch.map(\.draft), hint)
                if let last = stored.last { hint = Head(seq: last.seq, hash: last.hash) }
                for (waiter, entry) in zip(batch, stored) { waiter.continuation.resume(returning: entry) }
            } catch {
                hint = nil
                for waiter in batch { waiter.continuation.resume(throwing: error) }
            }
        }
        writing = false
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

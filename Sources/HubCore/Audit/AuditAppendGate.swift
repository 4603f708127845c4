import DAO
import Mongo
import Synchronization

/// Appends this process's audit entries to the chain in batches (`BatchingGate`: while one batch is being written,
/// the entries recorded meanwhile wait and go together in the next, one ordered insert), so that the services of one
/// process never race each other for the next `seq` and a busy hub pays one write for many entries. Replicas still
/// may race: the unique index on `seq` settles those.
///
/// It keeps the last head it wrote or read as a hint, so that an append does not read the head every time; the hint
/// is only a guess the unique index checks (a replica that appended meanwhile makes the insert fail, and the head is
/// read again from the hint on): the chain's state is in the database alone.
public final class AuditAppendGate: Sendable {
    /// Where the chain's head was last seen by this process.
    public struct Head: Sendable, Equatable {
        public var seq: Int64
        public var hash: String
    }

    /// The most entries one batch writes.
    static let maximumBatch = 500

    private let batches: BatchingGate<AuditLog.Draft, AuditEntry>

    /// A gate writing to `database`'s log: a test's stand-in for another process; the services use `shared(for:)`.
    public init(database: MongoDatabase) {
        let entries = AuditDAO(database: database)
        let hint = Mutex<Head?>(nil)
        batches = BatchingGate(maximumBatch: Self.maximumBatch) { drafts in
            do {
                let stored = try await Self.write(drafts, after: hint.withLock { $0 }, to: entries)
                hint.withLock { $0 = stored.last.map { Head(seq: $0.seq, hash: $0.hash) } ?? $0 }
                return stored
            } catch {
                hint.withLock { $0 = nil }
                throw error
            }
        }
    }

    /// Appends `draft` and answers its entry once a batch stored it.
    /// - Throws: `DAOError` when every attempt of its batch failed.
    func append(_ draft: AuditLog.Draft) async throws -> AuditEntry {
        try await batches.submit(draft)
    }

    /// Appends `drafts` in order after the head (`hint`, the head this process last saw, else read), in one ordered
    /// insert; when another replica took a place first, keeps what landed (its hashes are ours), reads the head from
    /// there on and chains the rest after it, after a random pause. Answers the entries stored, in order.
    static func write(_ drafts: [AuditLog.Draft], after hint: Head?, to entries: AuditDAO) async throws -> [AuditEntry]
    {
        var known = hint
        var rest = drafts[...]
        var stored: [AuditEntry] = []
        var attempt = 0
        let giveUp = ContinuousClock.now + AuditLog.appendPatience
        while !rest.isEmpty {
            attempt += 1
            var chain: [AuditEntry] = []
            do {
                if known == nil { known = try await entries.head().map { Head(seq: $0.seq, hash: $0.hash) } }
                var previous = known ?? Head(seq: 0, hash: AuditEntry.genesis)
                for draft in rest {
                    var entry = AuditEntry(
                        seq: previous.seq + 1, at: draft.at, actor: draft.actor, action: draft.action,
                        target: draft.target, change: draft.change, subjects: draft.subjects, prev: previous.hash)
                    entry.hash = AuditLog.hash(of: entry)
                    chain.append(entry)
                    previous = Head(seq: entry.seq, hash: entry.hash)
                }
                try await entries.insert(chain)
                return stored + chain
            } catch let error as DAOError where error.code == .duplicate || error.code == .unavailable {
                guard ContinuousClock.now < giveUp else { throw error }
                if let first = chain.first, let last = chain.last {
                    // An ordered insert stops at the first place taken (or where the connection broke): what went
                    // before it is ours and stays, and is not appended twice.
                    let landed = try await entries.hashes(from: first.seq, through: last.seq)
                    let ours = chain.prefix { landed[$0.seq] == $0.hash }
                    stored += ours
                    rest = rest.dropFirst(ours.count)
                    let from = ours.last.map { Head(seq: $0.seq, hash: $0.hash) } ?? known
                    // The head moved on from there (nil: read it whole on the next attempt).
                    if let from, let newer = try await entries.head(after: from.seq) {
                        known = Head(seq: newer.seq, hash: newer.hash)
                    } else {
                        known = nil
                    }
                } else {
                    known = nil
                }
                let pause =
                    error.code == .duplicate ? Int.random(in: 1...(4 * min(attempt, 10))) : 50 * min(attempt, 10)
                try? await Task.sleep(for: .milliseconds(pause))
            }
        }
        return stored
    }

    /// A gate the registry names without keeping it: it lives as long as the logs that use it, and while it lives
    /// its pool (which it holds) cannot be freed, so no other pool can take that pool's identity in the registry.
    private struct Registered: @unchecked Sendable {  // read and written under the registry's lock only
        weak var gate: AuditAppendGate?
    }

    /// The gates by pool and database name.
    private struct Key: Hashable {
        var pool: ObjectIdentifier
        var name: String
    }

    private static let registry = Mutex<[Key: Registered]>([:])

    /// The process's one gate for `database` (by its pool and name: two servers' databases of one name are two logs).
    static func shared(for database: MongoDatabase) -> AuditAppendGate {
        registry.withLock { registry in
            let key = Key(pool: ObjectIdentifier(database.pool), name: database.name)
            if let existing = registry[key]?.gate { return existing }
            registry = registry.filter { $0.value.gate != nil }
            let made = AuditAppendGate(database: database)
            registry[key] = Registered(gate: made)
            return made
        }
    }
}

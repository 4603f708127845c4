import Mongo

/// What a migration or an import did: counts per collection, every rule's count, conflicts, and
/// the verification of GET /channel.
public struct MigrationReport: Sendable {
    /// How many conflicts the report lists (all are counted in `counts`).
    public static let conflictsListed = 1_000

    /// Where the documents came from (a database without credentials, or file names).
    public var source: String
    /// Whether this was a dry run (nothing written; `inserted` counts what would have been).
    public var dryRun: Bool
    /// False when the run stopped before the end (a batch limit or cancellation): run it again to finish.
    public var completed = false
    /// True when an earlier run from the same source had stopped before the end (this one resumed it).
    public var resumedInterruptedRun = false
    /// Counts per collection (`icube`, `message`).
    public var counts: [String: CollectionCounts] = [:]
    /// Every rule's count, with examples.
    public var rules = RuleTally()
    /// The conflicts, up to `conflictsListed` of them.
    public var conflicts: [MigrationConflict] = []
    /// GET /channel compared with the legacy output; nil when no icube was read or the run stopped early.
    public var verification: ChannelVerification?
    /// How long the run took, in seconds.
    public var seconds: Double = 0

    /// An empty report for a run from `source`.
    public init(source: String, dryRun: Bool) {
        self.source = source
        self.dryRun = dryRun
    }

    /// The counts of `collection` (zero when the run did not read it).
    public func counts(_ collection: String) -> CollectionCounts { counts[collection] ?? CollectionCounts() }

    /// Documents read from the source, every collection together.
    public var documentsRead: Int { counts.values.reduce(0) { $0 + $1.read } }

    /// Documents read per second.
    public var rate: Double { seconds > 0 ? Double(documentsRead) / seconds : 0 }

    /// Conflicts of every collection.
    public var conflictCount: Int { counts.values.reduce(0) { $0 + $1.conflicts } }

    /// True when the run finished and GET /channel matched (or was not checked because no icube was read).
    public var succeeded: Bool { completed && (verification?.passed ?? true) }

    mutating func add(_ batch: CollectionCounts, conflicts: [MigrationConflict], to collection: String) {
        counts[collection, default: CollectionCounts()].add(batch)
        let room = Self.conflictsListed - self.conflicts.count
        if room > 0 { self.conflicts.append(contentsOf: conflicts.prefix(room)) }
    }
}

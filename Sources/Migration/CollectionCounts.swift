/// What a run did to one collection of the target.
public struct CollectionCounts: Sendable, Equatable {
    /// Documents read from the source.
    public var read = 0
    /// Documents inserted into the target (in a dry run: that would have been inserted).
    public var inserted = 0
    /// Documents the target already held with the same content (left alone).
    public var unchanged = 0
    /// Documents not written because of a conflict (see the report's conflicts).
    public var conflicts = 0

    /// No documents yet.
    public init() {}

    /// Counts of a batch.
    init(read: Int = 0, inserted: Int = 0, unchanged: Int = 0, conflicts: Int = 0) {
        self.read = read
        self.inserted = inserted
        self.unchanged = unchanged
        self.conflicts = conflicts
    }

    /// Adds another run's (or batch's) counts to these.
    mutating func add(_ other: CollectionCounts) {
        read += other.read
        inserted += other.inserted
        unchanged += other.unchanged
        conflicts += other.conflicts
    }
}

/// How a migration or an import runs.
public struct MigrationOptions: Sendable {
    /// Read everything and report, write nothing (not even indexes or the run's record).
    public var dryRun: Bool
    /// Documents per batch: one `find` by `_id` and one `insertMany` each.
    public var batchSize: Int
    /// Batches being written at once while the next is read and normalised.
    public var writesInFlight: Int
    /// Stop after this many batches, as an interruption would (nil: run to the end).
    public var maxBatches: Int?
    /// How progress is shown.
    public var progress: ProgressStyle
    /// How often a progress line is written when progress is shown as lines.
    public var progressInterval: Duration
    /// Where progress goes (standard output when nil).
    public var progressOutput: (@Sendable (String) -> Void)?

    /// Options for a real run in batches of 500 with progress on standard output.
    public init(
        dryRun: Bool = false, batchSize: Int = 500, writesInFlight: Int = 2, maxBatches: Int? = nil,
        progress: ProgressStyle = .automatic, progressInterval: Duration = .seconds(2),
        progressOutput: (@Sendable (String) -> Void)? = nil
    ) {
        self.dryRun = dryRun
        self.batchSize = max(1, batchSize)
        self.writesInFlight = max(1, writesInFlight)
        self.maxBatches = maxBatches
        self.progress = progress
        self.progressInterval = progressInterval
        self.progressOutput = progressOutput
    }
}

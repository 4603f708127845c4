import DAO
import Foundation
import Mongo

/// Moves a legacy hub's `icube` and `message` documents into msi-hub's database, normalised.
///
/// The source is a legacy database (`migrate`) or `mongoexport` files (`import`); it is only read.
/// Channels go first (their topic keys tell which messages name unknown topics), then messages,
/// in batches; then GET /channel's content is verified against the legacy output. Every run is
/// idempotent, so an interrupted one (a crash, `CancellationError`, a batch limit) is finished by
/// running it again.
public struct Migrator: Sendable {
    /// The database written (msi-hub's).
    public let target: MongoDatabase
    /// How the run goes.
    public let options: MigrationOptions

    /// A migrator into `target`.
    public init(target: MongoDatabase, options: MigrationOptions = MigrationOptions()) {
        self.target = target
        self.options = options
    }

    /// Copies the legacy database `source` (its `icube` and `message`) into the target.
    /// - Parameter label: how the report names the source (the URI without credentials).
    /// - Throws: `MigrationError` with `sameDatabase` or `database`.
    public func migrate(from source: MongoDatabase, label: String? = nil) async throws -> MigrationReport {
        if source.pool === target.pool, source.name == target.name {
            throw MigrationError(.sameDatabase, "the source and the target are the same database")
        }
        let icube = try await CollectionSource.open(source.collection(CollectionName.icube))
        let messages = try await CollectionSource.open(source.collection(CollectionName.message))
        return try await run(source: label ?? "database \(source.name)", icube: icube, messages: messages)
    }

    /// Imports `mongoexport` files of the legacy `icube` and `message` collections; either may be nil.
    /// - Throws: `MigrationError` with `nothingToDo`, `unreadableFile`, `invalidDocument` or `database`.
    public func importFiles(icube: URL?, messages: URL?) async throws -> MigrationReport {
        guard icube != nil || messages != nil else {
            throw MigrationError(.nothingToDo, "give an icube export, a message export, or both")
        }
        let icubeReader = try icube.map { try ExportFileReader(url: $0) }
        let messageReader = try messages.map { try ExportFileReader(url: $0) }
        let label = [icube.map { "icube \($0.path)" }, messages.map { "message \($0.path)" }]
            .compactMap { $0 }.joined(separator: ", ")
        return try await run(source: "files: \(label)", icube: icubeReader, messages: messageReader)
    }

    private func run(
        source label: String, icube: (some DocumentSource)?,
        messages: (some DocumentSource)?
    ) async throws -> MigrationReport {
        let clock = ContinuousClock()
        let started = clock.now
        var report = MigrationReport(source: label, dryRun: options.dryRun)
        let log = options.dryRun ? nil : MigrationLog(database: target)
        if let log { report.resumedInterruptedRun = try await log.begin(source: label) }
        var run = RunState(options: options)

        var legacyChannels: [BSONDocument] = []
        var plannedChannels: [BSONDocument] = []
        if var icube {
            let normaliser = ChannelNormaliser()
            try await copy(CollectionName.icube, from: &icube, report: &report, run: &run, log: log) { channel, tally in
                let normalised = normaliser.normalise(channel, tally: &tally)
                legacyChannels.append(channel)
                plannedChannels.append(normalised)
                return normalised
            }
        }
        if !run.stopped, var messages {
            let known = try await topicKeys(planned: plannedChannels)
            let normaliser = MessageNormaliser(knownTopicKeys: known)
            try await copy(CollectionName.message, from: &messages, report: &report, run: &run, log: log) {
                normaliser.normalise($0, tally: &$1)
            }
        }
        report.completed = !run.stopped
        if report.completed, icube != nil {
            let stored =
                options.dryRun
                ? plannedChannels
                : try await mapDatabaseErrors("cannot read the target") {
                    try await target.collection(CollectionName.icube).find()
                }
            report.verification = ChannelVerifier().verify(sources: legacyChannels, targets: stored)
        }
        let elapsed = (clock.now - started).components
        report.seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        try await log?.finish(report)
        return report
    }

    /// What one run carries from collection to collection: the progress display and the batch budget.
    private struct RunState {
        var progress: ProgressDisplay
        var batchesLeft: Int?
        var stopped = false

        init(options: MigrationOptions) {
            progress = ProgressDisplay(
                style: options.progress, interval: options.progressInterval,
                output: options.progressOutput)
            batchesLeft = options.maxBatches
        }
    }

    /// Reads, normalises and writes one collection in batches, a few writes in flight at once.
    private func copy(
        _ collection: String, from source: inout some DocumentSource, report: inout MigrationReport,
        run: inout RunState, log: MigrationLog?,
        normalise: (BSONDocument, inout RuleTally) -> BSONDocument
    ) async throws {
        defer { source.close() }
        let writer = TargetWriter(collection: target.collection(collection), dryRun: options.dryRun)
        var duplicates = DuplicateFilter(uniqueField: collection == CollectionName.message ? "msi_key" : nil)
        var inFlight: [Task<(CollectionCounts, [MigrationConflict]), any Error>] = []
        var read = 0
        run.progress.begin()
        while true {
            // Cancellation ends the run with `CancellationError` (its record stays `running`); the batch
            // limit ends it with a report. Either way the next run finishes the work.
            try Task.checkCancellation()
            if run.batchesLeft == 0 {
                run.stopped = true
                break
            }
            let documents = try await source.next(options.batchSize)
            if documents.isEmpty { break }
            run.batchesLeft? -= 1
            var tally = RuleTally()
            let normalised = documents.map { normalise($0, &tally) }
            report.rules.merge(tally)
            read += documents.count
            let (admitted, conflicts) = duplicates.admit(normalised, collection: collection)
            report.add(
                CollectionCounts(read: documents.count, conflicts: conflicts.count), conflicts: conflicts,
                to: collection)
            if inFlight.count >= options.writesInFlight {
                let (counts, conflicts) = try await inFlight.removeFirst().value
                report.add(counts, conflicts: conflicts, to: collection)
            }
            inFlight.append(Task { try await writer.write(admitted) })
            run.progress.update(collection, documents: read, fraction: source.fractionDone)
        }
        for task in inFlight {
            let (counts, conflicts) = try await task.value
            report.add(counts, conflicts: conflicts, to: collection)
        }
        run.progress.update(collection, documents: read, fraction: run.stopped ? source.fractionDone : 1, final: true)
        try await log?.checkpoint(collection, counts: report.counts(collection))
    }

    /// The topic keys of the cube being migrated and of the target's (to report messages to unknown topics).
    private func topicKeys(planned: [BSONDocument]) async throws -> Set<String> {
        let stored = try await mapDatabaseErrors("cannot read the target's icube") {
            try await target.collection(CollectionName.icube).find(
                [:],
                options: FindOptions(
                    projection: ["areas.subjects.topic_key": 1]))
        }
        var keys = Set<String>()
        for channel in planned + stored {
            for area in channel["areas"]?.arrayValue ?? [] {
                for subject in area.documentValue?["subjects"]?.arrayValue ?? [] {
                    if let key = subject.documentValue?["topic_key"]?.stringValue { keys.insert(key) }
                }
            }
        }
        return keys
    }
}

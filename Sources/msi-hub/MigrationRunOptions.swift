import ArgumentParser
import DAO
import Foundation
import Migration
import Mongo

/// The flags `migrate` and `import` share: dry run, batch size, progress, report format.
struct MigrationRunOptions: ParsableArguments {
    @Flag(name: .customLong("dry-run"), help: "Read everything and print the report; write nothing.")
    var dryRun = false
    @Option(name: .customLong("batch-size"), help: "Documents per batch (one insertMany each).")
    var batchSize = 500
    @Option(
        name: .customLong("max-batches"),
        help: ArgumentHelp("Stop after this many batches, as an interruption would.", visibility: .hidden))
    var maxBatches: Int?
    @Option(help: "Progress: auto (a bar on a terminal, lines otherwise), bar, lines or none.")
    var progress = "auto"
    @Flag(help: "Print the report as JSON instead of text.")
    var json = false

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be positive") }
        guard ["auto", "bar", "lines", "none"].contains(progress) else {
            throw ValidationError("--progress must be auto, bar, lines or none")
        }
    }

    /// The library's options for these flags.
    var options: MigrationOptions {
        let style: ProgressStyle =
            switch progress {
            case "bar": .bar
            case "lines": .lines
            case "none": .none
            default: .automatic
            }
        return MigrationOptions(dryRun: dryRun, batchSize: batchSize, maxBatches: maxBatches, progress: style)
    }

    /// Runs `body` against the target database, its indexes first unless this is a dry run
    /// (a dry run writes nothing, not even an index).
    func withTarget(uri: String, _ body: (MongoDatabase) async throws -> MigrationReport) async throws {
        let report = try await withPool(uri: uri) { pool in
            let database = pool.database()
            if !dryRun { try await DatabaseIndexes.ensure(in: database) }
            return try await body(database)
        }
        print(json ? LegacyJSONWriter().string(report.document) : report.text)
        if !report.completed { throw ExitCode(3) }
        if !report.succeeded { throw ExitCode(2) }
    }
}

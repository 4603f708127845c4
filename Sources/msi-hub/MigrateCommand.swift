import ArgumentParser
import HubServer
import Migration
import Mongo

/// `msi-hub migrate --from URI`: copies a legacy hub's database into msi-hub's, normalised and verified.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy a legacy hub's database (icube, message) into msi-hub's, normalised and verified.",
        discussion: """
            The legacy database is only read. Running again changes nothing that is already there, so an \
            interrupted run is finished by running it again. Exit status: 0 done and verified, 2 GET /channel \
            differs from the legacy output, 3 stopped before the end.
            """)

    @Option(help: "The legacy hub's database: a MongoDB URI whose path names the database. Only read.")
    var from: String
    @Option(help: "The target database (default: --mongodb-uri or MONGODB_URI).")
    var to: String?
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var runOptions: MigrationRunOptions

    func run() async throws {
        let targetURI = try to ?? database.configuration().mongoURI
        let source = DatabaseAddress(uri: from)
        guard !source.isSameDatabase(as: DatabaseAddress(uri: targetURI)) else {
            throw ValidationError("--from names the target database: migrate into another database")
        }
        try await withPool(uri: from) { sourcePool in
            try await runOptions.withTarget(uri: targetURI) { target in
                try await Migrator(target: target, options: runOptions.options)
                    .migrate(from: sourcePool.database(), label: source.redacted)
            }
        }
    }
}

import ArgumentParser
import Foundation
import HubServer
import Migration

/// `msi-hub import --icube FILE --messages FILE`: loads a legacy hub's `mongoexport` files into msi-hub's database.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import mongoexport files of a legacy hub's icube and message collections, normalised and verified.",
        discussion: """
            Files may be JSON lines or a JSON array, in legacy or v2 (canonical or relaxed) Extended JSON. \
            Either file may be given alone. Running again changes nothing that is already there. Exit status: \
            0 done and verified, 2 GET /channel differs from the legacy output, 3 stopped before the end.
            """)

    @Option(help: "The export of the legacy icube collection.")
    var icube: String?
    @Option(help: "The export of the legacy message collection.")
    var messages: String?
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var runOptions: MigrationRunOptions

    func validate() throws {
        guard icube != nil || messages != nil else { throw ValidationError("give --icube, --messages, or both") }
    }

    func run() async throws {
        let targetURI = try database.configuration().mongoURI
        try await runOptions.withTarget(uri: targetURI) { target in
            try await Migrator(target: target, options: runOptions.options).importFiles(
                icube: icube.map { URL(fileURLWithPath: $0) }, messages: messages.map { URL(fileURLWithPath: $0) })
        }
    }
}

import ArgumentParser
import DAO
import Foundation
import HubCore

/// `msi-hub person export|erase ID`: a person's data on request, as `GET /person/:personID/export` and
/// `DELETE /person/:personID` answer it.
struct PersonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "person", abstract: "Export or erase what the hub holds on a person.",
        subcommands: [Export.self, Erase.self])

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write everything the hub holds on a person as one JSON document on standard output.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The person id (the school sign-in's).") var person: String

        func run() async throws {
            try await database.withServices { services in
                try await services.personData.export(person) { text in
                    FileHandle.standardOutput.write(Data(text.utf8))
                }
            }
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a person's data: devices, groups, settings, deliveries, receipts, room posts.",
            discussion: "Starts the erasure job (or takes up the one under way) and runs it here to its end; a "
                + "running hub would run it as well, once. Prints what was removed.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The person id (the school sign-in's).") var person: String
        @Option(help: "What happens to the person's room posts: delete or anonymise.") var posts = "delete"

        func run() async throws {
            guard let posts = Erasure.Posts(rawValue: posts) else {
                throw ValidationError("--posts takes delete or anonymise")
            }
            let job = try await database.withServices { services in
                _ = try await services.personData.erase(person, posts: posts)
                for _ in 0..<600 {
                    if let job = try await services.personData.erasure(of: person), job.state == .done { return job }
                    if try await services.personData.runDueErasures() == 0 { try await Task.sleep(for: .seconds(1)) }
                }
                throw ValidationError("the erasure is still held by another process; see GET /person/:id/erasure")
            }
            print(
                "erased: \(job.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
            )
        }
    }
}

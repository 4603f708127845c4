import ArgumentParser
import Foundation
import MSIKit

/// Prints the feature flags that messages not shown (`"display": false`) set.
struct Flags: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the flags messages not shown (display false) set, by name: NAME=VALUE, then until=<time> "
            + "when it expires, and from=<msi_key> the message that set it.")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let flags = try await reporting { try await client.flags.all() }
        let time = ISO8601DateFormatter()
        time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for flag in flags {
            let until = flag.expiresAt.map { " until=\(time.string(from: $0))" } ?? ""
            Output.line("\(flag.name)=\(flag.value)\(until) from=\(flag.msiKey)")
        }
    }
}

import ArgumentParser
import Foundation
import MSIKit

/// Prints the last daily digest the device received (`msi-device run` receives it, as any push).
struct DigestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Print the last daily digest received: DIGEST <count> <summary>, then one line per message listed "
            + "(<msi_key> [<from>] <title>); NO DIGEST before the first.")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        guard let digest = try await reporting({ try await client.lastDigest() }) else {
            Output.line("NO DIGEST")
            return
        }
        Output.line("DIGEST \(digest.count) \(digest.summary)")
        for item in digest.items { Output.line("\(item.msiKey) [\(item.from)] \(item.title)") }
    }
}

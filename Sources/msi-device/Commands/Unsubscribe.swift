import ArgumentParser
import MSIKit

/// Unsubscribes the phone from a topic (the hub refuses a Forced one).
struct Unsubscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unsubscribe from a topic (not a Forced one).")

    @Argument(help: "The topic key: channel, area and subject ids joined by '-'.")
    var topic: String
    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        try await reporting { try await client.unsubscribe(topic) }
        Output.line("unsubscribed \(topic)")
    }
}

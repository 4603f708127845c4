import ArgumentParser
import MSIKit

/// Acknowledges a message as the app's button would, with an optional response.
struct Ack: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledge a message (POST /device/:id/receipts): prints ACK <msi_key>, or QUEUED <msi_key> when "
            + "the hub cannot be reached (sent by a later command).")

    @OptionGroup var state: StateOption
    @Argument(help: "The message's msi_key.")
    var msiKey: String
    @Option(help: "The person's response (one of the message's, when it offers some).")
    var response: String?

    func run() async throws {
        let client = try await state.client()
        try await reporting { try await client.acknowledge(msiKey: msiKey, response: response) }
        do {
            // Sent already unless the hub could not be reached: this tells which.
            try await client.sendReceipts()
            Output.line("ACK \(msiKey)")
        } catch {
            Output.line("QUEUED \(msiKey)")
            Output.error("\(CommandFailure(error))")
        }
    }
}

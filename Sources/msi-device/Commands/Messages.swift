import ArgumentParser
import Foundation
import MSIKit

/// Prints the messages the phone has stored.
struct Messages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the stored messages, newest first: time, msi_key, ALERT or INFO, title (and an Alert's body); "
            + "for a message to persons or groups also how it came (to=person or to=group:ID) and its data (key=value); "
            + "an urgency other than active (urgency=LEVEL); a request for an acknowledgement (ack: RESPONSE | ...).")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let messages = try await reporting { try await client.store.messages() }
        let time = ISO8601DateFormatter()
        time.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for message in messages {
            let what =
                message.distribution == .alert ? "ALERT \(message.title): \(message.desc)" : "INFO \(message.title)"
            Output.line("\(time.string(from: message.date)) \(message.msiKey) \(what)\(Output.audience(of: message))")
        }
    }
}

import ArgumentParser
import MSIKit

/// Subscribes the phone to a topic.
struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Subscribe to a topic.")

    @Argument(help: "The topic key: channel, area and subject ids joined by '-'.")
    var topic: String
    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let subscription = try await reporting { try await client.subscribe(topic) }
        Output.line(
            "subscribed \(subscription.topicKey) \(subscription.channelName) / \(subscription.areaName) / \(subscription.subjectName)"
        )
    }
}

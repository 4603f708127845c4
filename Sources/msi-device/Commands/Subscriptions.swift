import ArgumentParser
import MSIKit

/// Lists the phone's subscriptions as the hub has them.
struct Subscriptions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the subscriptions: topic key, level, distribution, applied, channel / area / subject.")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let subscriptions = try await reporting { try await client.subscriptions() }
        for subscription in subscriptions {
            let level = subscription.level == .optIn ? "-" : subscription.level.rawValue
            Output.line(
                "\(subscription.topicKey) \(level) \(subscription.distribution) applied=\(subscription.applied) "
                    + "\(subscription.channelName) / \(subscription.areaName) / \(subscription.subjectName)")
        }
    }
}

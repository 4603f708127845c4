import ArgumentParser
import MSIKit

/// Prints, and changes, the settings of the device's person: they follow the person to every device.
struct Settings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the person's settings (GET /device/:id/person/settings), after the changes asked for: "
            + "PERSON <id>, QUIET <from>-<to> <tz> or QUIET none, LOCALE <tag> or LOCALE none, then SUBJECT <topic> "
            + "<mode> and GROUP <id> <mode> lines for each choice other than instant.")

    @OptionGroup var state: StateOption
    @Option(name: .customLong("subject"), help: "TOPIC_KEY=instant|digest|off (repeatable).")
    var subjects: [String] = []
    @Option(name: .customLong("group"), help: "GROUP_ID=instant|digest|off (repeatable).")
    var groups: [String] = []
    @Option(help: "Quiet hours for every device of the person: FROM-TO@ZONE, such as 22:00-07:00@Europe/Berlin.")
    var quiet: String?
    @Flag(help: "Clear the person's quiet hours.")
    var noQuiet = false
    @Option(help: "The person's language, such as de or pt-BR.")
    var locale: String?

    /// "KEY=MODE" as a pair, or a usage error.
    static func choice(_ text: String) throws -> (String, DeliveryMode) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let mode = DeliveryMode(rawValue: parts[1]) else {
            throw ValidationError("\(text): expected ID=instant, ID=digest or ID=off")
        }
        return (parts[0], mode)
    }

    func run() async throws {
        let client = try await state.client()
        for text in subjects {
            let (topic, mode) = try Self.choice(text)
            try await reporting { try await client.setDelivery(mode, for: .subject(topic)) }
        }
        for text in groups {
            let (group, mode) = try Self.choice(text)
            try await reporting { try await client.setDelivery(mode, for: .group(group)) }
        }
        if let quiet {
            let halves = quiet.split(separator: "@", maxSplits: 1).map(String.init)
            let times = halves.first?.split(separator: "-").map(String.init) ?? []
            guard halves.count == 2, times.count == 2 else {
                throw ValidationError("--quiet: expected FROM-TO@ZONE, such as 22:00-07:00@Europe/Berlin")
            }
            let hours = QuietHours(from: times[0], to: times[1], timeZone: halves[1])
            try await reporting { try await client.setQuietHours(hours) }
        }
        if noQuiet { try await reporting { try await client.setQuietHours(nil) } }
        if let locale { try await reporting { try await client.setLocale(locale) } }
        let settings = try await reporting { try await client.settings() }
        Output.line("PERSON \(settings.person)")
        if let hours = settings.quietHours {
            Output.line("QUIET \(hours.from)-\(hours.to) \(hours.timeZone)")
        } else {
            Output.line("QUIET none")
        }
        Output.line("LOCALE \(settings.locale ?? "none")")
        for (topic, mode) in settings.subjects.sorted(by: { $0.key < $1.key }) {
            Output.line("SUBJECT \(topic) \(mode)")
        }
        for (group, mode) in settings.groups.sorted(by: { $0.key < $1.key }) { Output.line("GROUP \(group) \(mode)") }
    }
}

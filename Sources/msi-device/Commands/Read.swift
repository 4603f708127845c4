import ArgumentParser
import MSIKit

/// Marks a message read, as a chat's list would.
struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mark a message read (POST /device/:id/receipts, event read): prints READ <msi_key>; the person's "
            + "other phones are told.")

    @OptionGroup var state: StateOption
    @Argument(help: "The message's msi_key.")
    var msiKey: String

    func run() async throws {
        let client = try await state.client()
        try await reporting { try await client.markRead(msiKey: msiKey) }
        Output.line("READ \(msiKey)")
    }
}

/// Prints the person's unread counts.
struct Unread: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the person's unread messages (GET /device/:id/unread): UNREAD <total>, then <group> <n> lines."
    )

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let counts = try await reporting { try await client.unreadCounts() }
        Output.line("UNREAD \(counts.total)")
        for (group, count) in counts.groups.sorted(by: { $0.key < $1.key }) { Output.line("\(group) \(count)") }
    }
}

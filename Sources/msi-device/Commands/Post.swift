import ArgumentParser
import MSIKit

/// Posts to a room as a member's chat app would.
struct Post: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post to a room (POST /group/:groupID/messages): prints POSTED <msi_key>; every other member's "
            + "phones get it, never this person's.")

    @OptionGroup var state: StateOption
    @Argument(help: "The room's group id.")
    var group: String
    @Argument(help: "The text.")
    var message: String
    @Option(help: "The title (default: the room's name).")
    var title: String?

    func run() async throws {
        let client = try await state.client()
        let key = try await reporting { try await client.post(toGroup: group, message: message, title: title) }
        Output.line("POSTED \(key)")
    }
}

/// Leaves a room that lets its members leave.
struct Leave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Leave a room (DELETE /group/:groupID/members/:personID): prints LEFT <group>.")

    @OptionGroup var state: StateOption
    @Argument(help: "The room's group id.")
    var group: String

    func run() async throws {
        let client = try await state.client()
        try await reporting { try await client.leave(group: group) }
        Output.line("LEFT \(group)")
    }
}

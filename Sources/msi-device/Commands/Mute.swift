import ArgumentParser
import Foundation
import MSIKit

/// Mutes (or unmutes) a room or group for the device's person, on all of their devices.
struct Mute: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mute a room or group for the person (PUT /device/:id/person/mutes/:groupID): prints MUTED <group>; "
            + "--off unmutes (UNMUTED <group>).")

    @OptionGroup var state: StateOption
    @Argument(help: "The group id.")
    var group: String
    @Option(help: "Minutes the mute lasts (default: until unmuted).")
    var minutes: Int?
    @Flag(help: "Unmute instead.")
    var off = false

    func run() async throws {
        let client = try await state.client()
        if off {
            try await reporting { try await client.unmute(group: group) }
            Output.line("UNMUTED \(group)")
            return
        }
        let until = minutes.map { Date().addingTimeInterval(Double($0) * 60) }
        try await reporting { try await client.mute(group: group, until: until) }
        Output.line("MUTED \(group)")
    }
}

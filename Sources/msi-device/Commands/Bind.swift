import ArgumentParser
import MSIKit

/// Binds the phone to the person a signed assertion names, as the app does after its sign-in.
struct Bind: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bind the phone to the person a signed assertion (JWT) names; prints the person id the hub stored.")

    @Option(help: "The signed assertion from the school's sign-in (an id_token or the school backend's JWT).")
    var assertion: String
    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        let person = try await reporting { try await client.bind(assertion: assertion) }
        Output.line("bound to \(person)")
    }
}

/// Unbinds the phone from its person, as the app does at sign-out.
struct Unbind: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unbind the phone from its person: it no longer receives that person's messages.")

    @OptionGroup var state: StateOption

    func run() async throws {
        let client = try await state.client()
        try await reporting { try await client.unbind() }
        Output.line("unbound")
    }
}

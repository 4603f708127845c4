import ArgumentParser
import MSIKit

/// Listens like a phone in use: catches up, then prints each message as it arrives from the fake FCM.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Catch up, then poll the fake FCM and print each new message: ALERT <title>: <desc> or INFO <title>.")

    @OptionGroup var state: StateOption
    @Option(name: .customLong("for"), help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    func run() async throws {
        let client = try await state.client()
        do {
            try await client.start().forEach(Output.arrival)
        } catch {
            // The phone still listens without the hub: complete payloads need none.
            Output.error("start: \(CommandFailure(error))")
        }
        Output.line("listening")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await client.run(onMessage: { Output.arrival($0) }, onError: { Output.error("\(CommandFailure($0))") })
            }
            if let seconds {
                group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            }
            await group.next()
            group.cancelAll()
        }
    }
}

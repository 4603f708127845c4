import ArgumentParser
import MSIKit

/// Listens like a phone in use: catches up, then prints each message as it arrives from the fake FCM.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Catch up, then poll the fake FCM and print each new message: ALERT <title>: <desc> or INFO <title>, "
            + "a correction as corrected <msi_key>: <new title>, a withdrawal as withdrawn <msi_key>; "
            + "then as `messages` does its audience, urgency and acknowledgement request (ack: RESPONSE | ...); "
            + "each is reported received, and with --auto-ack acknowledged.")

    @OptionGroup var state: StateOption
    @Option(name: .customLong("for"), help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?
    @Flag(help: "Acknowledge each new message as it arrives (for tests of acknowledgement and escalation).")
    var autoAck = false
    @Option(help: "The response --auto-ack gives (one of the message's, when it offers some).")
    var response: String?

    func run() async throws {
        let client = try await state.client()
        do {
            for received in try await client.start() { await arrived(received, client: client) }
        } catch {
            // The phone still listens without the hub: complete payloads need none.
            Output.error("start: \(CommandFailure(error))")
        }
        Output.line("listening")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await client.run(
                    onMessage: { await arrived($0, client: client) },
                    onError: { Output.error("\(CommandFailure($0))") })
            }
            if let seconds {
                group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Prints a new message and, with `--auto-ack`, acknowledges it (`ACK <msi_key>`).
    private func arrived(_ received: ReceivedMessage, client: MSIClient) async {
        Output.arrival(received)
        // A correction, withdrawal or acknowledgement elsewhere is of a message answered (or not) already.
        switch received {
        case .corrected, .withdrawn, .acknowledged, .read: return
        case .alert, .information: break
        }
        guard autoAck else { return }
        do {
            try await client.acknowledge(msiKey: received.message.msiKey, response: response)
            Output.line("ACK \(received.message.msiKey)")
        } catch {
            Output.error("ack: \(CommandFailure(error))")
        }
    }
}

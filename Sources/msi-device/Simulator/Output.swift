import Foundation
import MSIKit

/// Lines on standard output and error, written at once (a test reading the output through a pipe sees each line
/// as it happens).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("msi-device: " + text + "\n").utf8))
    }

    /// A newly arrived message: `ALERT <title>: <desc>` or `INFO <title>`, then `audience(of:)`.
    static func arrival(_ received: ReceivedMessage) {
        switch received {
        case .alert(let title, let body, let message): line("ALERT \(title): \(body)\(audience(of: message))")
        case .information(let message): line("INFO \(message.title)\(audience(of: message))")
        case .corrected(let message): line("corrected \(message.msiKey): \(message.title)")
        case .withdrawn(let message): line("withdrawn \(message.msiKey)")
        case .acknowledged(let message): line("acknowledged \(message.msiKey)")
        case .read(let message, let unread): line("read \(message.msiKey)" + (unread.map { " unread=\($0)" } ?? ""))
        }
    }

    /// How a message to persons or groups came and its data, as ` to=person` or ` to=group:<id>` and then
    /// ` data: key=value …` in key order; then its urgency when not the default (` urgency=critical`) and a request
    /// for an acknowledgement (` ack: I'm safe | I need help`, or ` ack` alone for a plain one); "" for a message to
    /// a subject without any of these.
    static func audience(of message: Message) -> String {
        var text = ""
        if let audience = message.audience {
            text += " to=\(audience.rawValue)" + (message.groupID.map { ":\($0)" } ?? "")
        }
        if !message.data.isEmpty {
            text +=
                " data: "
                + message.data.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        if message.urgency != .active { text += " urgency=\(message.urgency)" }
        if message.acknowledgementRequested {
            text +=
                " ack"
                + (message.acknowledgementResponses.isEmpty
                    ? "" : ": " + message.acknowledgementResponses.joined(separator: " | "))
        }
        return text
    }
}

/// A failure the command reports in a sentence (MSIKit's errors with their message and code).
struct CommandFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }

    init(_ error: MSIKitError) { description = "\(error.message) [\(error.code)]" }
}

/// Runs MSIKit calls, turning their errors into ones the command line prints as a sentence.
func reporting<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MSIKitError {
        throw CommandFailure(error)
    }
}

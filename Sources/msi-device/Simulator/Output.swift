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

    /// A newly arrived message: `ALERT <title>: <desc>` or `INFO <title>`.
    static func arrival(_ received: ReceivedMessage) {
        switch received {
        case .alert(let title, let body, _): line("ALERT \(title): \(body)")
        case .information(let message): line("INFO \(message.title)")
        }
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

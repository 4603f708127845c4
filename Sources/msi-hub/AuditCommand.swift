import ArgumentParser
import DAO
import Foundation
import HubCore
import HubTime

/// `msi-hub audit verify|export`: checks the audit log's hash chain and writes it out.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Verify or export the tamper-evident audit log.",
        subcommands: [Verify.self, Export.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Walk the chain; print the head (exit 0) or name the first broken entry (exit 1).",
            discussion: "Compare the head with the hourly `audit head seq=N hash=H` log lines: a head older than "
                + "the last line logged means entries were cut off the end.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let result = try await database.withServices { try await $0.audit.verify() }
            switch result {
            case .intact(let seq, let hash):
                print("audit log intact: head seq=\(seq) hash=\(hash)")
            case .broken(let seq, let reason):
                print("audit log broken at seq=\(seq): \(reason.explanation)")
                throw ExitCode(1)
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the entries recorded since a time as JSON lines on standard output, in chain order.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "RFC 3339 time (2026-11-26T08:00:00Z) or Unix milliseconds; the whole log when left out.")
        var since: String?

        func run() async throws {
            let since = try since.map(Self.milliseconds) ?? 0
            _ = try await database.withServices { services in
                try await services.audit.export(since: since) { line in
                    FileHandle.standardOutput.write(Data((line + "\n").utf8))
                }
            }
        }

        /// `text` as Unix milliseconds: digits as they are, or an RFC 3339 time (fractional seconds allowed).
        static func milliseconds(_ text: String) throws -> Int64 {
            if let milliseconds = Int64(text), milliseconds >= 0 { return milliseconds }
            let plain = ISO8601DateFormatter()
            let fractional = ISO8601DateFormatter()
            fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            guard let date = plain.date(from: text) ?? fractional.date(from: text) else {
                throw ValidationError("--since takes an RFC 3339 time (2026-11-26T08:00:00Z) or Unix milliseconds")
            }
            return Int64((date.timeIntervalSince1970 * 1000).rounded())
        }
    }
}

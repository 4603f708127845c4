@testable import HubServer
import Logging
import Synchronization
import Testing

@Suite("Text logs: one event is one line, whatever a client put in it")
struct HubLoggingTests {
    /// The lines a handler wrote.
    final class Lines: Sendable {
        private let written = Mutex("")

        var all: [Substring] {
            written.withLock { $0.split(separator: "\n", omittingEmptySubsequences: false) }.dropLast()
        }

        /// A stream appending here.
        var stream: Stream { Stream(lines: self) }

        struct Stream: TextOutputStream, Sendable {
            let lines: Lines
            mutating func write(_ string: String) { lines.written.withLock { $0 += string } }
        }
    }

    @Test func aUsernameWithALineBreakCannotForgeALogLine() {
        let lines = Lines()
        var logger = Logger(label: "msi-hub") { label in
            TextLogHandler(label: label, logLevel: .info, stream: lines.stream, metadataProvider: nil)
        }
        logger[metadataKey: "request_id"] = "r\n1"
        let forged = "ann\n2030-01-01T00:00:00+0000 info msi-hub: user=admin login succeeded"
        logger.info(
            "login failed for \(forged)",
            metadata: [
                "user": .string(forged),
                "agent": .stringConvertible("curl\r\u{1B}[2K\t\u{7F}\u{85}\u{2028}x"),
                "list": .array([.string("a\nb")]),
                "map\nkey": .dictionary(["k\n": .string("v\r")]),
            ])
        logger.info("plain stays plain", metadata: ["path": "C:\\dir\\file", "text": "école – ok"])
        #expect(lines.all.count == 2)
        let first = String(lines.all[0])
        #expect(first.contains(#"login failed for ann\n2030-01-01T00:00:00+0000 info msi-hub: user=admin"#))
        #expect(first.contains(#"user=ann\n2030"#))
        #expect(first.contains(#"request_id=r\n1"#))
        #expect(first.contains(#"agent=curl\r\u{1B}[2K\t\u{7F}\u{85}\u{2028}x"#))
        #expect(first.contains(#"list=["a\nb"]"#))
        #expect(first.contains(#"map\nkey=["k\n": "v\r"]"#))
        #expect(!first.unicodeScalars.contains { $0.properties.generalCategory == .control })
        #expect(lines.all[1].hasSuffix(#"plain stays plain"#))
        #expect(lines.all[1].contains(#"path=C:\dir\file "#) && lines.all[1].contains("text=école – ok"))
    }

    @Test func anErrorIsLoggedEscapedAsMetadata() {
        struct Refusal: Error, CustomStringConvertible { var description: String { "bad\nline" } }
        let lines = Lines()
        let logger = Logger(label: "msi-hub") { label in
            TextLogHandler(label: label, logLevel: .info, stream: lines.stream, metadataProvider: nil)
        }
        logger.error("failed", error: Refusal())
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains(#"error.message=bad\nline"#) == true)
    }

    @Test func escapingLeavesTextWithoutControlCharactersAlone() {
        for text in ["", "ann", "a\\nb", "naïve “quotes” – 日本 🙂", "\u{A0}nbsp"] {
            #expect(LogEscaping.escaped(text) == text)
        }
        #expect(LogEscaping.escaped("\u{0}\u{1F}\u{9F}\u{2029}") == #"\u{0}\u{1F}\u{9F}\u{2029}"#)
    }
}

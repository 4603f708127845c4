import Foundation
import Logging

/// The process's logging: swift-log with a text or JSON line per event.
public enum HubLogging {
    /// Installs the log handler the configuration asks for (once per process).
    public static func bootstrap(_ configuration: HubConfiguration) {
        let level = configuration.logLevel
        switch configuration.logFormat {
        case .text:
            LoggingSystem.bootstrap { label in TextLogHandler(label: label, logLevel: level) }
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, logLevel: level) }
        }
    }
}

/// One line per event on standard error, as swift-log's `StreamLogHandler` writes it, with control characters in
/// the message and in metadata keys and values escaped (`\n`, `\r`, `\t`, `\u{1B}`): a value a client chose
/// (a username, a path, a header) cannot end the line and forge the next one, nor move the terminal's cursor.
/// Backslashes are left as they are, so paths and JSON stay readable.
struct TextLogHandler: LogHandler {
    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    /// Writes the line; it is given escaped metadata only and has none of its own.
    private var stream: StreamLogHandler

    /// A handler writing to standard error.
    init(label: String, logLevel: Logger.Level) {
        self.init(label: label, logLevel: logLevel, stream: StandardError())
    }

    /// A handler writing to `stream` (tests read the lines).
    init(
        label: String, logLevel: Logger.Level, stream: any TextOutputStream & Sendable,
        metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        self.stream = StreamLogHandler(label: label, stream: stream, metadataProvider: nil)
        self.metadataProvider = metadataProvider
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let explicit = event.metadata { all.merge(explicit) { $1 } }
        var event = event
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
            event.error = nil
        }
        event.message = "\(LogEscaping.escaped(event.message.description))"
        event.metadata = all.isEmpty ? nil : LogEscaping.escaped(all)
        stream.log(event: event)
    }

    /// Standard error, written with `FileHandle` so each line is one `write(2)`.
    private struct StandardError: TextOutputStream, Sendable {
        mutating func write(_ string: String) {
            FileHandle.standardError.write(Data(string.utf8))
        }
    }
}

/// Control characters made visible, so one log event stays one line.
enum LogEscaping {
    /// `text` with C0 and C1 control characters, DEL and the Unicode line and paragraph separators escaped.
    static func escaped(_ text: String) -> String {
        // Fast path: no byte that starts such a character (< 0x20, DEL, 0xC2 of U+0080-U+009F, 0xE2 of U+2028/9).
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}"..."\u{9F}", "\u{2028}", "\u{2029}":
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Metadata with every key and every value escaped, each value as the text it is written as (an array or a
    /// dictionary escaped as a whole, so its quoting is not escaped twice).
    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        var result: Logger.Metadata = [:]
        for (key, value) in metadata { result[escaped(key)] = .string(escaped(value.description)) }
        return result
    }
}

/// One JSON object per line on standard error: time, level, label, message and metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [
            "time": ISO8601DateFormatter().string(from: Date()),
            "level": event.level.rawValue,
            "label": label,
            "message": event.message.description,
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = value.description
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}

import Foundation
import Logging

/// The process's logging: swift-log with a text or JSON line per event.
public enum HubLogging {
    /// Installs the log handler the configuration asks for (once per process).
    public static func bootstrap(_ configuration: HubConfiguration) {
        let level = configuration.logLevel
        switch configuration.logFormat {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, logLevel: level) }
        }
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

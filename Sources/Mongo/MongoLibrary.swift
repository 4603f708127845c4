import CMongo
import Logging

/// libmongoc's process-wide initialisation, done once before the first use of the library.
enum MongoLibrary {
    /// Touching this runs `mongoc_init()` exactly once (Swift globals initialise lazily and atomically)
    /// and sends libmongoc's own log through swift-log: its warnings and errors, not its debug and info chatter.
    static let initialized: Void = {
        mongoc_init()
        mongoc_log_set_handler(
            { level, domain, message, _ in
                guard level.rawValue <= MONGOC_LOG_LEVEL_WARNING.rawValue, let message else { return }
                let domain = domain.map { String(cString: $0) } ?? "mongoc"
                MongoLibrary.logger.log(
                    level: level.rawValue <= MONGOC_LOG_LEVEL_ERROR.rawValue ? .error : .warning,
                    "\(String(cString: message))", metadata: ["domain": "\(domain)"])
            }, nil)
    }()

    /// Where libmongoc's lines go (made on first use, after the program has bootstrapped its logging).
    static let logger = Logger(label: "libmongoc")
}

import CMongo

/// libmongoc's process-wide initialisation, done once before the first use of the library.
enum MongoLibrary {
    /// Touching this runs `mongoc_init()` exactly once (Swift globals initialise lazily and atomically)
    /// and keeps libmongoc's own chatter (its debug and info lines) off standard error.
    static let initialized: Void = {
        mongoc_init()
        mongoc_log_set_handler({ level, domain, message, _ in
            guard level.rawValue <= MONGOC_LOG_LEVEL_WARNING.rawValue, let message else { return }
            let domain = domain.map { String(cString: $0) } ?? "mongoc"
            print("libmongoc \(domain): \(String(cString: message))")
        }, nil)
    }()
}

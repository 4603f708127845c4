import CMongo

/// libmongoc's process-wide initialisation, done once before the first use of the library.
enum MongoLibrary {
    /// Touching this runs `mongoc_init()` exactly once (Swift globals initialise lazily and atomically).
    static let initialized: Void = {
        mongoc_init()
    }()
}

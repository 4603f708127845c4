import Mongo

/// A failure of a data access object, saying precisely what was not found or why a write failed.
public struct DAOError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; callers switch on it (the HTTP layer maps it to a status).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case channelNotFound, areaNotFound, subjectNotFound, topicNotFound, messageNotFound
            case userNotFound, tokenNotFound, deviceNotFound, duplicate, unavailable, database
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No channel has the given `_id`.
        public static let channelNotFound = Code(.channelNotFound)
        /// The channel has no area with the given `id`.
        public static let areaNotFound = Code(.areaNotFound)
        /// The area has no subject with the given `id`.
        public static let subjectNotFound = Code(.subjectNotFound)
        /// No subject has the given `topic_key`.
        public static let topicNotFound = Code(.topicNotFound)
        /// No message has the given `msi_key`.
        public static let messageNotFound = Code(.messageNotFound)
        /// No user has the given name.
        public static let userNotFound = Code(.userNotFound)
        /// No token has the given id.
        public static let tokenNotFound = Code(.tokenNotFound)
        /// No device has the given id.
        public static let deviceNotFound = Code(.deviceNotFound)
        /// A unique index refused the write.
        public static let duplicate = Code(.duplicate)
        /// The database could not be reached; retrying later may succeed.
        public static let unavailable = Code(.unavailable)
        /// The database refused the operation for another reason.
        public static let database = Code(.database)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for a person, free of stored data.
    public var message: String
    /// The database error behind this one, if any.
    public var underlying: MongoError?

    public init(_ code: Code, _ message: String, underlying: MongoError? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The DAO error a database error becomes.
    public init(_ error: MongoError) {
        if error.code == .duplicateKey {
            self.init(.duplicate, "an element with the same key exists already", underlying: error)
        } else if error.isUnavailable {
            self.init(.unavailable, "the database is unavailable", underlying: error)
        } else {
            self.init(.database, "the database refused the operation", underlying: error)
        }
    }

    public var description: String {
        "DAOError(\(code)): \(message)" + (underlying.map { " [\($0)]" } ?? "")
    }
}

/// Runs a database operation, turning its `MongoError` into a `DAOError`.
func mapErrors<T>(_ operation: () async throws -> T) async throws -> T {
    do {
        return try await operation()
    } catch let error as MongoError {
        throw DAOError(error)
    }
}

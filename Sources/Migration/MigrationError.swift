import Mongo

/// A failure of a migration or an import, with a code callers switch on.
///
/// `description` names the code and a sentence free of document contents; `underlying` keeps the
/// Mongo layer's error when the database was the cause.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case unreadableFile, invalidDocument, sameDatabase, nothingToDo, database
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An export file could not be opened or read.
        public static let unreadableFile = Code(.unreadableFile)
        /// An export file holds something that is not an Extended JSON document.
        public static let invalidDocument = Code(.invalidDocument)
        /// The source and the target are the same database: a migration would read what it writes.
        public static let sameDatabase = Code(.sameDatabase)
        /// Neither an icube nor a message export was given.
        public static let nothingToDo = Code(.nothingToDo)
        /// The source or the target database refused an operation or could not be reached.
        public static let database = Code(.database)

        /// The code's name (`unreadableFile`, ...).
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for a person (a file name and line number at most, never document contents).
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error & Sendable)?

    /// An error of `code` saying `message`.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The code, the message and the cause: never a document's contents.
    public var description: String {
        let cause = underlying.map { " (\($0))" } ?? ""
        return "MigrationError(\(code)): \(message)\(cause)"
    }
}

/// Runs `body`, turning the Mongo layer's errors into `MigrationError.database`.
@discardableResult
func mapDatabaseErrors<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MigrationError {
        throw error
    } catch let error as MongoError {
        throw MigrationError(.database, what, underlying: error)
    }
}

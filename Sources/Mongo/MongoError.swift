import CMongo

/// Any failure of the Mongo layer: from libmongoc, from libbson, or from bad BSON or JSON input.
///
/// Callers switch on `code`; `domain` and `serverCode` keep libmongoc's own numbers for logs.
/// `description` names the code and numbers only: the message may quote user data.
public struct MongoError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; extensible without breaking callers' `switch`es on `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case duplicateKey, network, serverSelection, timeout, writeConflict, documentValidation
            case commandFailed, unsupported, invalidArgument, invalidBSON, invalidJSON, forbiddenKey, tooDeep
            case invalidURI, poolClosed, cursor, deadlineExceeded, outcomeUnknown, notAttempted, unknown
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A unique index refused the write (server codes 11000, 11001, 12582).
        public static let duplicateKey = Code(.duplicateKey)
        /// The connection failed or broke.
        public static let network = Code(.network)
        /// No server could be selected within the server-selection timeout.
        public static let serverSelection = Code(.serverSelection)
        /// An operation exceeded its time limit.
        public static let timeout = Code(.timeout)
        /// A concurrent write or transaction conflicted (server code 112).
        public static let writeConflict = Code(.writeConflict)
        /// The collection's validator refused the document (server code 121).
        public static let documentValidation = Code(.documentValidation)
        /// The server does not offer the command or stage, e.g. change streams on a standalone server
        /// (server codes 40573, 40324, 115, 59).
        public static let unsupported = Code(.unsupported)
        /// The server answered a command with an error not named above.
        public static let commandFailed = Code(.commandFailed)
        /// libmongoc refused an argument or option before sending anything.
        public static let invalidArgument = Code(.invalidArgument)
        /// Bytes that are not a valid BSON document.
        public static let invalidBSON = Code(.invalidBSON)
        /// Text that is not valid JSON.
        public static let invalidJSON = Code(.invalidJSON)
        /// A key that starts with `$` or contains `.` or NUL, refused from user input.
        public static let forbiddenKey = Code(.forbiddenKey)
        /// JSON nested deeper than the parser's limit.
        public static let tooDeep = Code(.tooDeep)
        /// A connection string libmongoc cannot parse.
        public static let invalidURI = Code(.invalidURI)
        /// The client pool is closing or closed.
        public static let poolClosed = Code(.poolClosed)
        /// A cursor or change stream failed while iterating.
        public static let cursor = Code(.cursor)
        /// The caller's deadline passed while the operation was under way (it may still finish on its thread).
        public static let deadlineExceeded = Code(.deadlineExceeded)
        /// A write was sent but never acknowledged, and could not be confirmed before the caller's deadline:
        /// it may or may not have happened.
        public static let outcomeUnknown = Code(.outcomeUnknown)
        /// The operation was given up before anything of it was sent (its deadline passed while it waited).
        public static let notAttempted = Code(.notAttempted)
        /// Anything libmongoc reports that maps to none of the above.
        public static let unknown = Code(.unknown)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// libmongoc's message, or ours; may quote data, so it is kept out of `description`.
    public var message: String
    /// libmongoc's error domain (`mongoc_error_domain_t`), 0 when the error is ours.
    public var domain: UInt32
    /// libmongoc's or the server's error code, 0 when the error is ours.
    public var serverCode: UInt32

    /// Creates an error of the Mongo layer's own (no libmongoc numbers).
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.domain = 0
        self.serverCode = 0
    }

    /// True when the database could not be reached: worth a 503 and a retry, not a bug.
    public var isUnavailable: Bool {
        code == .network || code == .serverSelection || code == .timeout || code == .poolClosed
            || code == .deadlineExceeded || code == .outcomeUnknown || code == .notAttempted
    }

    /// True when a write that failed this way may still have happened: it may have reached the server before
    /// the connection broke or the wait ended. A server that could not be selected, or a closed pool, was never
    /// sent anything.
    public var mayHaveWritten: Bool {
        code == .network || code == .timeout || code == .deadlineExceeded || code == .outcomeUnknown
    }

    public var description: String {
        "MongoError(\(code), domain: \(domain), code: \(serverCode))"
    }
}

extension MongoError {
    /// The one mapping from libmongoc's `bson_error_t` to `MongoError`.
    init(_ error: bson_error_t) {
        var error = error
        let message = withUnsafeBytes(of: &error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        self.message = message
        self.domain = error.domain
        self.serverCode = error.code
        self.code = Self.code(domain: error.domain, code: error.code)
    }

    /// The code of libmongoc's error `domain` and `code` (visible to the package's tests).
    package static func code(domain: UInt32, code: UInt32) -> Code {
        switch domain {
        case MONGOC_ERROR_SERVER.rawValue, MONGOC_ERROR_WRITE_CONCERN.rawValue, MONGOC_ERROR_QUERY.rawValue:
            switch code {
            case 11000, 11001, 12582: return .duplicateKey
            case 112: return .writeConflict
            case 121: return .documentValidation
            case 50, 262: return .timeout
            case 40573, 40324, 115, 59: return .unsupported
            case 6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436: return .network
            default: return .commandFailed
            }
        case MONGOC_ERROR_STREAM.rawValue, MONGOC_ERROR_PROTOCOL.rawValue:
            return .network
        case MONGOC_ERROR_SERVER_SELECTION.rawValue:
            return .serverSelection
        case MONGOC_ERROR_BSON.rawValue:
            return .invalidBSON
        case MONGOC_ERROR_COMMAND.rawValue:
            return code == MONGOC_ERROR_COMMAND_INVALID_ARG.rawValue ? .invalidArgument : .commandFailed
        case MONGOC_ERROR_CURSOR.rawValue:
            return .cursor
        case MONGOC_ERROR_CLIENT.rawValue:
            return code == MONGOC_ERROR_CLIENT_AUTHENTICATE.rawValue ? .commandFailed : .network
        default:
            return .unknown
        }
    }
}

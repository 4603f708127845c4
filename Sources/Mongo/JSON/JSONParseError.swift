/// Why `JSONParser` refused a text: a code a caller switches on (a request body's 400 or 422), and a message
/// for a person that may quote the offending key.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case malformed, notAnObject, forbiddenKey, duplicateKey, tooDeep }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// Not JSON at all: bad syntax, bad UTF-8, a number out of range.
        public static let malformed = Code(.malformed)
        /// Valid JSON whose top level is not the object asked for.
        public static let notAnObject = Code(.notAnObject)
        /// A key that starts with `$` or contains `.` or NUL: it must never reach the database.
        public static let forbiddenKey = Code(.forbiddenKey)
        /// A key given twice in one object (RFC 8259 leaves the meaning open; we refuse to guess).
        public static let duplicateKey = Code(.duplicateKey)
        /// Nested deeper than the parser's limit.
        public static let tooDeep = Code(.tooDeep)

        public var description: String { value.rawValue }
    }

    public let code: Code
    /// A sentence for a person; may quote a key of the input.
    public let message: String
    /// The key at fault, for `forbiddenKey` and `duplicateKey`.
    public let key: String?

    public init(_ code: Code, _ message: String, key: String? = nil) {
        self.code = code
        self.message = message
        self.key = key
    }

    /// The code only: the message may quote user data.
    public var description: String { "JSONParseError(\(code))" }
}

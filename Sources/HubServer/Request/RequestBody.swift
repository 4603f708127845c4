import Hummingbird
import Mongo
import NIOCore

/// Reading a request's JSON body into a BSON document, with the errors ARCHITECTURE.md names.
extension Request {
    /// The body as a JSON object, refusing what must not reach the database.
    /// - Throws: `HubError` 415 (not JSON), 413 (too large), 400 (malformed JSON, or a body that ended before its
    ///   `Content-Length`), 422 (not an
    ///   object, `$`/`.` keys, a key twice, nesting too deep).
    /// `maxSize` raises the context's limit for a route whose bodies are larger by design (a group's roster).
    mutating func jsonObject(context: HubRequestContext, maxSize: Int? = nil) async throws -> BSONDocument {
        let buffer = try await jsonBody(maxSize: maxSize ?? context.maxUploadSize)
        do {
            return try JSONParser().document(from: buffer.readableBytesView)
        } catch let error as JSONParseError {
            throw Self.refusal(error)
        }
    }

    /// The body as any JSON value (a receipts batch is an array), with `jsonObject`'s checks of type, size and
    /// syntax.
    /// - Throws: `HubError` 415, 413, 400 (malformed JSON, a short body), 422 (a key twice, nesting too deep).
    mutating func jsonValue(context: HubRequestContext, maxSize: Int) async throws -> BSONValue {
        let buffer = try await jsonBody(maxSize: maxSize)
        do {
            return try JSONParser().value(from: buffer.readableBytesView)
        } catch let error as JSONParseError {
            throw Self.refusal(error)
        }
    }

    /// The body's bytes, when it says it is JSON and is at most `maxSize` bytes.
    /// - Throws: `HubError` 415 (not JSON), 413 (too large), 400 (a body that ended before its `Content-Length`).
    private mutating func jsonBody(maxSize: Int) async throws -> ByteBuffer {
        let contentType = headers[.contentType]?.lowercased() ?? ""
        guard
            contentType.hasPrefix("application/json")
                || contentType.hasPrefix("application/") && contentType.contains("+json")
        else {
            throw HubError(
                .unsupportedMediaType, .unsupportedMediaType, "the body must be JSON (Content-Type: application/json)")
        }
        do {
            return try await collectBody(upTo: maxSize)
        } catch is NIOTooManyBytesError {
            throw HubError(.contentTooLarge, .bodyTooLarge, "the body is larger than \(maxSize / 1024) KiB")
        } catch {
            throw HubError.incompleteBody
        }
    }

    /// The answer to a body the JSON parser refused.
    private static func refusal(_ error: JSONParseError) -> HubError {
        switch error.code {
        case .malformed: HubError.badRequest(.malformedJSON, "the body is not valid JSON: \(error.message)")
        case .notAnObject: HubError.invalid(.invalidBody, "the body must be a JSON object")
        case .duplicateKey: HubError.invalid(.duplicateKey, error.message)
        default: HubError.invalid(.invalidBody, error.message)
        }
    }
}

/// Typed, validated reads of a JSON body's fields; every failure names the field (422).
struct FieldReader {
    let document: BSONDocument

    /// A required string of at most `maxLength` characters (by default any length: a service that owns the field's
    /// limit checks it, as `MessageService` does a message's).
    func string(_ key: String, maxLength: Int = .max, allowEmpty: Bool = true) throws -> String {
        guard let value = document[key] else {
            throw HubError.invalid(.missingField, "the field \"\(key)\" is required")
        }
        return try Self.string(value, name: key, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    /// An optional string; nil when absent.
    func optionalString(_ key: String, maxLength: Int) throws -> String? {
        guard let value = document[key], !value.isNull else { return nil }
        return try Self.string(value, name: key, maxLength: maxLength, allowEmpty: true)
    }

    /// One of an enumeration's raw values.
    func oneOf<T: RawRepresentable & CaseIterable>(
        _ key: String, in document: BSONDocument? = nil,
        path: String? = nil
    ) throws -> T where T.RawValue == String {
        let source = document ?? self.document
        let name = path ?? key
        guard let value = source[key] else {
            throw HubError.invalid(.missingField, "the field \"\(name)\" is required")
        }
        let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard let string = value.stringValue, let result = T(rawValue: string) else {
            throw HubError.invalid(.invalidField, "the field \"\(name)\" must be one of \(allowed)")
        }
        return result
    }

    /// A required JSON object.
    func object(_ key: String) throws -> BSONDocument {
        guard let value = document[key] else {
            throw HubError.invalid(.missingField, "the field \"\(key)\" is required")
        }
        guard let object = value.documentValue else {
            throw HubError.invalid(.invalidField, "the field \"\(key)\" must be an object")
        }
        return object
    }

    /// An optional array of usernames (for `access`); nil when absent.
    func optionalUsernames(_ key: String) throws -> [String]? {
        guard let value = document[key], !value.isNull else { return nil }
        guard let array = value.arrayValue, array.count <= 1_000 else {
            throw HubError.invalid(.invalidField, "the field \"\(key)\" must be an array of at most 1000 usernames")
        }
        return try array.enumerated().map { index, element in
            try Self.string(element, name: "\(key)[\(index)]", maxLength: 200, allowEmpty: false)
        }
    }

    /// An optional boolean; nil when absent or null.
    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = document[key], !value.isNull else { return nil }
        guard let bool = value.boolValue else {
            throw HubError.invalid(.invalidField, "the field \"\(key)\" must be true or false")
        }
        return bool
    }

    /// An optional integer in `range`; nil when absent.
    func optionalInteger(_ key: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let value = document[key], !value.isNull else { return nil }
        guard let integer = value.int64Value, range.contains(integer) else {
            throw HubError.invalid(
                .invalidField, "the field \"\(key)\" must be an integer from \(range.lowerBound) to \(range.upperBound)"
            )
        }
        return integer
    }

    private static func string(_ value: BSONValue, name: String, maxLength: Int, allowEmpty: Bool) throws -> String {
        guard let string = value.stringValue else {
            throw HubError.invalid(.invalidField, "the field \"\(name)\" must be a string")
        }
        guard string.count <= maxLength else {
            throw HubError.invalid(.fieldTooLong, "the field \"\(name)\" is longer than \(maxLength) characters")
        }
        guard allowEmpty || !string.isEmpty else {
            throw HubError.invalid(.emptyField, "the field \"\(name)\" must not be empty")
        }
        return string
    }
}

/// The length limits of the cube's names and descriptions, which fit the phones' local store (the spec's SQLite
/// columns); a message's are `MessageField.maxLength`.
enum FieldLimits {
    static let name = 200
    static let desc = 500
}

extension Parameters {
    /// The ObjectId in the path parameter `name`.
    /// - Throws: `HubError` 400 when it is not 24 hex digits.
    func objectID(_ name: String) throws -> ObjectID {
        guard let text = get(name), let id = ObjectID(hex: text) else {
            throw HubError.badRequest(.invalidID, "\(name) must be a 24-character hex ObjectId")
        }
        return id
    }
}

import _CryptoExtras
import Foundation

/// A Google service account, as in the JSON key file that `GOOGLE_APPLICATION_CREDENTIALS` names.
public struct ServiceAccount: Sendable {
    /// Google's token endpoint, used when a key file has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// The Firebase project messages are sent for (`project_id`).
    public var projectID: String
    /// The account's e-mail address, the JWT's issuer (`client_email`).
    public var clientEmail: String
    /// The id of the key, sent as the JWT's `kid` when present (`private_key_id`).
    public var privateKeyID: String?
    /// Where assertions are exchanged for access tokens (`token_uri`).
    public var tokenURI: String
    /// The RSA key that signs assertions, parsed from `private_key`.
    public var privateKey: _RSA.Signing.PrivateKey

    /// An account from its parts.
    public init(
        projectID: String,
        clientEmail: String,
        privateKeyID: String? = nil,
        tokenURI: String = ServiceAccount.defaultTokenURI,
        privateKey: _RSA.Signing.PrivateKey
    ) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }

    /// Reads the service-account key file at `path`.
    /// - Throws: `CredentialsError` with `.fileNotFound`, `.unreadable`, `.malformed` or `.invalidPrivateKey`,
    ///   naming the path.
    public init(contentsOfFile path: String) throws(CredentialsError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CredentialsError(code: .fileNotFound, path: path, message: "no such file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CredentialsError(code: .unreadable, path: path, message: "cannot be read (\(Self.reason(error)))")
        }
        try self.init(json: data, path: path)
    }

    /// Parses the contents of a service-account key file; `path` only names it in errors.
    /// - Throws: `CredentialsError` with `.malformed` or `.invalidPrivateKey`.
    public init(json: Data, path: String? = nil) throws(CredentialsError) {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: json) as? [String: Any] else {
                throw CredentialsError(code: .malformed, path: path, message: "is not a JSON object")
            }
            object = parsed
        } catch let error as CredentialsError {
            throw error
        } catch {
            throw CredentialsError(code: .malformed, path: path, message: "is not valid JSON")
        }

        func field(_ name: String, required: Bool = true) throws(CredentialsError) -> String? {
            switch object[name] {
            case let value as String where !value.isEmpty:
                return value
            case nil where !required:
                return nil
            case nil:
                throw CredentialsError(code: .malformed, path: path, message: "has no \"\(name)\"")
            default:
                throw CredentialsError(code: .malformed, path: path, message: "has an invalid \"\(name)\"")
            }
        }

        if let type = try field("type", required: false), type != "service_account" {
            throw CredentialsError(
                code: .malformed, path: path,
                message: "is of type \"\(type)\", not a service account key (\"service_account\")"
            )
        }
        let projectID = try field("project_id") ?? ""
        let clientEmail = try field("client_email") ?? ""
        let pem = try field("private_key") ?? ""
        let tokenURI = try field("token_uri", required: false) ?? Self.defaultTokenURI
        guard tokenURI.hasPrefix("https://") || tokenURI.hasPrefix("http://") else {
            throw CredentialsError(
                code: .malformed, path: path, message: "has a \"token_uri\" that is not an http(s) URL"
            )
        }
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw CredentialsError(
                code: .invalidPrivateKey, path: path,
                message: "has a \"private_key\" that is not a PEM RSA private key of 2048 bits or more"
            )
        }
        self.init(
            projectID: projectID,
            clientEmail: clientEmail,
            privateKeyID: try field("private_key_id", required: false),
            tokenURI: tokenURI,
            privateKey: key
        )
    }

    /// The reading error's own words without the file's contents.
    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(nsError.code)))
        }
        return nsError.localizedDescription
    }
}

/// A service-account key file that cannot be used; the message names the file and the problem.
public struct CredentialsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem; new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileNotFound
            case unreadable
            case malformed
            case invalidPrivateKey
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// No file at the path.
        public static let fileNotFound = Code(.fileNotFound)
        /// The file exists but cannot be read (permissions, a directory, ...).
        public static let unreadable = Code(.unreadable)
        /// Not JSON, or a field is missing or of the wrong type.
        public static let malformed = Code(.malformed)
        /// `private_key` is not a usable PEM RSA key.
        public static let invalidPrivateKey = Code(.invalidPrivateKey)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The kind of problem.
    public var code: Code
    /// The key file's path, when the credentials came from a file.
    public var path: String?
    /// What is wrong, as the end of a sentence that starts with the file.
    public var message: String

    /// An error of `code` about the file at `path`.
    public init(code: Code, path: String?, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    /// For example: `service-account credentials file "/etc/msi/sa.json" has no "client_email"`.
    /// Never includes the key or other contents of the file.
    public var description: String {
        if let path {
            return "service-account credentials file \"\(path)\" \(message)"
        }
        return "service-account credentials \(message)"
    }
}

import CCurl

/// Why an HTTP request got no response: the transport failed, before any status code.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timeout
            case connectFailed
            case tls
            case invalidRequest
            case shutDown
            case cancelled
            case other
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The connect or total timeout elapsed.
        public static let timeout = Code(.timeout)
        /// The host could not be resolved or did not accept the connection.
        public static let connectFailed = Code(.connectFailed)
        /// The TLS handshake or the verification of the server's certificate failed.
        public static let tls = Code(.tls)
        /// The request itself cannot be sent (for example a header with a line break in it).
        public static let invalidRequest = Code(.invalidRequest)
        /// The client was shut down.
        public static let shutDown = Code(.shutDown)
        /// The caller's task was cancelled: before the request was sent (`CurlClient`; one under way runs to its
        /// end), or at any time (`CurlMultiClient`, which stops the transfer).
        public static let cancelled = Code(.cancelled)
        /// Any other transport failure; `message` says which.
        public static let other = Code(.other)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// libcurl's `CURLcode`, or 0 when the failure did not come from libcurl.
    public var curlCode: Int
    /// libcurl's message, or ours, for a person reading the log.
    public var message: String

    /// An error of `code`.
    public init(code: Code, curlCode: Int = 0, message: String) {
        self.code = code
        self.curlCode = curlCode
        self.message = message
    }

    /// The one place where a libcurl result becomes an `CurlError`.
    init(curlCode: CURLcode, message: String) {
        self.init(code: Self.code(for: curlCode), curlCode: Int(curlCode.rawValue), message: message)
    }

    /// The one place where a failed libcurl multi call becomes an `CurlError` (`.other`: the multi itself failed,
    /// out of memory or misused, not the transfer).
    init(multiCode: CURLMcode, call: String) {
        let text = curl_multi_strerror(multiCode).map { String(cString: $0) } ?? "error \(multiCode.rawValue)"
        self.init(code: .other, message: "\(call) failed: \(text)")
    }

    /// A line for the log: the code, libcurl's number and its message.
    public var description: String {
        curlCode == 0
            ? "CurlError(\(code)): \(message)"
            : "CurlError(\(code), curl \(curlCode)): \(message)"
    }

    private static func code(for curlCode: CURLcode) -> Code {
        switch curlCode {
        case CURLE_OPERATION_TIMEDOUT:
            .timeout
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            .connectFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_USE_SSL_FAILED:
            .tls
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            .invalidRequest
        default:
            .other
        }
    }
}

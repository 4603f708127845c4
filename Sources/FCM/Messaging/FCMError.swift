import Curl
import Foundation

/// FCM did not accept a request: its refusal, or why the request never got an answer.
public struct FCMError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case quotaExceeded
            case unavailable
            case `internal`
            case timeout
            case connectionFailed
            case invalidArgument
            case senderIdMismatch
            case notFound
            case unregistered
            case unauthenticated
            case other
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// 429 `QUOTA_EXCEEDED`: too many messages for the project or topic; retry after `retryAfter`.
        public static let quotaExceeded = Code(.quotaExceeded)
        /// 503 `UNAVAILABLE`: FCM is overloaded; retry with backoff, honouring `retryAfter`.
        public static let unavailable = Code(.unavailable)
        /// 500 `INTERNAL`: an error in FCM; retry with backoff.
        public static let `internal` = Code(.internal)
        /// No answer within the request timeout (or 504 from a gateway); retry with backoff.
        public static let timeout = Code(.timeout)
        /// The connection to FCM or to the token endpoint failed (refused, DNS, TLS); retry with backoff.
        public static let connectionFailed = Code(.connectionFailed)
        /// 400 `INVALID_ARGUMENT`: the request is wrong; do not retry.
        public static let invalidArgument = Code(.invalidArgument)
        /// 403 `SENDER_ID_MISMATCH` / `PERMISSION_DENIED`: the account may not send for the project.
        public static let senderIdMismatch = Code(.senderIdMismatch)
        /// 404 `NOT_FOUND`: no such project, topic subscription or other entity.
        public static let notFound = Code(.notFound)
        /// 404 `UNREGISTERED`: the registration token is gone (the app was uninstalled or the token rotated);
        /// stop sending to it and forget its subscriptions.
        public static let unregistered = Code(.unregistered)
        /// No valid access token: the token endpoint refused the service account, or FCM kept answering 401.
        public static let unauthenticated = Code(.unauthenticated)
        /// Anything else; `httpStatus` and `message` say what.
        public static let other = Code(.other)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// FCM's wait for 429 `QUOTA_EXCEEDED` when it sends no `Retry-After`: Google asks for at least a minute.
    public static let defaultQuotaRetryAfter: Duration = .seconds(60)

    /// The kind of failure.
    public var code: Code
    /// The HTTP status of FCM's (or the token endpoint's) answer, when there was one.
    public var httpStatus: Int?
    /// The error status in FCM's JSON error body, e.g. `RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT`.
    public var status: String?
    /// The `errorCode` of FCM's `FcmError` detail, e.g. `QUOTA_EXCEEDED`, `UNREGISTERED`.
    public var fcmErrorCode: String?
    /// FCM's message, or our own words when FCM did not answer.
    public var message: String
    /// Whether sending the same request later may succeed.
    public var isRetryable: Bool
    /// How long FCM asked to wait before retrying (`Retry-After`), when it did.
    public var retryAfter: Duration?

    /// An error of `code`.
    public init(
        code: Code,
        httpStatus: Int? = nil,
        status: String? = nil,
        fcmErrorCode: String? = nil,
        message: String,
        isRetryable: Bool,
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.httpStatus = httpStatus
        self.status = status
        self.fcmErrorCode = fcmErrorCode
        self.message = message
        self.isRetryable = isRetryable
        self.retryAfter = retryAfter
    }

    /// A line for the log: code, status and FCM's message; never the request body.
    public var description: String {
        var parts = ["\(code)"]
        if let httpStatus { parts.append("HTTP \(httpStatus)") }
        if let status { parts.append(status) }
        if let fcmErrorCode, fcmErrorCode != status { parts.append(fcmErrorCode) }
        if let retryAfter { parts.append("retry after \(retryAfter.components.seconds)s") }
        return "FCMError(\(parts.joined(separator: ", "))): \(message)"
    }
}

extension FCMError {
    /// The one place where an FCM error answer becomes an `FCMError`: by the `FcmError` detail's errorCode,
    /// else by the HTTP status. `notFound` is what a 404 without an `FcmError` detail means for the call: a
    /// subscription call that names a registration answers 404 only when the registration is gone.
    init(response: CurlResponse, notFound: Code = .notFound, now: Date = Date()) {
        let body = GoogleErrorBody(response.body)
        var code = Self.code(fcmErrorCode: body.fcmErrorCode, httpStatus: response.status)
        if code == .notFound { code = notFound }
        var retryAfter = response.header("Retry-After").flatMap { Self.parseRetryAfter($0, now: now) }
        if code == .quotaExceeded, retryAfter == nil {
            retryAfter = Self.defaultQuotaRetryAfter
        }
        let retryable =
            [.quotaExceeded, .unavailable, .internal, .timeout].contains(code)
            || (code == .other && response.status >= 500)
        self.init(
            code: code,
            httpStatus: response.status,
            status: body.status,
            fcmErrorCode: body.fcmErrorCode,
            message: body.message ?? "FCM answered \(response.status)",
            isRetryable: retryable,
            retryAfter: retryAfter
        )
    }

    /// A request that got no answer from FCM.
    init(transport error: CurlError) {
        switch error.code {
        case .timeout:
            self.init(code: .timeout, message: error.message, isRetryable: true)
        case .invalidRequest:
            self.init(code: .other, message: error.message, isRetryable: false)
        default:
            // Connection refused, DNS, TLS, shut down: the same request may go through later.
            self.init(code: .connectionFailed, message: error.message, isRetryable: true)
        }
    }

    /// No access token: the token endpoint's refusal is an authentication failure, its outage retryable.
    init(token error: AccessTokenError) {
        switch error.code {
        case .unavailable:
            self.init(
                code: .unavailable, httpStatus: error.status, message: "token endpoint: \(error.message)",
                isRetryable: true)
        case .transport:
            self.init(code: .connectionFailed, message: error.message, isRetryable: true)
        default:
            self.init(
                code: .unauthenticated, httpStatus: error.status, status: error.oauthError,
                message: "token endpoint: \(error.message)", isRetryable: false)
        }
    }

    private static func code(fcmErrorCode: String?, httpStatus: Int) -> Code {
        switch fcmErrorCode {
        case "QUOTA_EXCEEDED": return .quotaExceeded
        case "UNAVAILABLE": return .unavailable
        case "INTERNAL": return .internal
        case "INVALID_ARGUMENT": return .invalidArgument
        case "SENDER_ID_MISMATCH": return .senderIdMismatch
        case "UNREGISTERED": return .unregistered
        case "THIRD_PARTY_AUTH_ERROR": return .unauthenticated
        default: break
        }
        switch httpStatus {
        case 400: return .invalidArgument
        case 401: return .unauthenticated
        case 403: return .senderIdMismatch
        case 404: return .notFound
        case 429: return .quotaExceeded
        case 500: return .internal
        case 503: return .unavailable
        case 504: return .timeout
        default: return .other
        }
    }

    /// `Retry-After` as delay-seconds or as an HTTP-date (RFC 9110 section 10.2.3).
    static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) {
            return seconds >= 0 ? .seconds(seconds) : nil
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSince(now).rounded(.up))))
    }
}

/// Google's JSON error body: `{"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED",
/// "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "QUOTA_EXCEEDED"}]}}`.
struct GoogleErrorBody {
    var status: String?
    var message: String?
    var fcmErrorCode: String?

    init(_ body: [UInt8]) {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        status = error?["status"] as? String
        message = error?["message"] as? String
        let details = error?["details"] as? [[String: Any]] ?? []
        let fcmError = details.first { ($0["@type"] as? String)?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }
        fcmErrorCode = fcmError?["errorCode"] as? String
    }
}

import Curl
import Foundation
import Logging
import Metrics

/// A source of OAuth2 access tokens for FCM; `AccessTokenProvider` is the real one.
public protocol AccessTokenSource: Sendable {
    /// A token valid for at least a little while.
    /// - Throws: `AccessTokenError` when none can be had.
    func accessToken() async throws -> String
    /// Forgets `token` (FCM answered 401 to it), so that the next call fetches a new one.
    func invalidate(token: String?) async
}

/// Access tokens for a service account: signs an RS256 JWT, exchanges it at the account's `token_uri`, and
/// caches the token until 60 seconds before it expires (halfway through, for tokens of under two minutes).
/// However many callers wait, one exchange at a time.
public actor AccessTokenProvider: AccessTokenSource {
    /// A token is renewed this long before it expires, so none expires on its way to FCM.
    public static let renewalMargin: Int64 = 60

    private let account: ServiceAccount
    private let httpClient: CurlClient
    private let now: @Sendable () -> Date
    private let logger: Logger
    private var cached: CachedToken?
    private var refresh: Task<CachedToken, any Error>?
    private var refreshGeneration = 0

    /// The number of exchanges at the token endpoint so far (successful or not), for tests and metrics.
    public private(set) var exchangeCount = 0
    /// The same count for GET /metrics.
    private let exchanges = Counter(label: "msi_fcm_token_exchanges_total")

    /// A provider for `account`, exchanging through `httpClient`; `now` is the clock tests may replace.
    public init(
        account: ServiceAccount,
        httpClient: CurlClient,
        logger: Logger = Logger(label: "msi-hub.relay.token"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.account = account
        self.httpClient = httpClient
        self.logger = logger
        self.now = now
    }

    /// The cached token, or a new one when it expires within `renewalMargin` seconds.
    /// - Throws: `AccessTokenError` (`.rejected`, `.unavailable`, `.transport`, `.malformedResponse`,
    ///   `.signingFailed`).
    public func accessToken() async throws -> String {
        let now = now()
        if let cached, now < cached.renewAt {
            return cached.token
        }
        let task: Task<CachedToken, any Error>
        let generation: Int
        if let refresh {
            task = refresh
            generation = refreshGeneration
        } else {
            exchangeCount += 1
            exchanges.increment()
            refreshGeneration += 1
            generation = refreshGeneration
            task = Task { [account, httpClient, logger] in
                try await Self.exchange(account: account, httpClient: httpClient, logger: logger, now: now)
            }
            refresh = task
        }
        do {
            let token = try await task.value
            if generation == refreshGeneration, refresh != nil {
                cached = token
                refresh = nil
            }
            return token.token
        } catch {
            if generation == refreshGeneration { refresh = nil }
            throw error
        }
    }

    /// Forgets the cached token if it is `token` (or whatever it is, when `token` is nil); a token already
    /// replaced by a newer one is left alone, so many 401s to one token cost one refresh.
    public func invalidate(token: String? = nil) {
        guard let cached else { return }
        if token == nil || token == cached.token {
            self.cached = nil
        }
    }

    /// One exchange: a fresh assertion POSTed as a form to the token endpoint.
    private static func exchange(
        account: ServiceAccount,
        httpClient: CurlClient,
        logger: Logger,
        now: Date
    ) async throws -> CachedToken {
        let assertion: String
        do {
            assertion = try ServiceAccountJWT.make(for: account, issuedAt: Int64(now.timeIntervalSince1970))
        } catch {
            throw AccessTokenError(code: .signingFailed, message: "the assertion could not be signed")
        }
        let form =
            "grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + formEncode(assertion)
        let response: CurlResponse
        do {
            response = try await httpClient.post(
                url: account.tokenURI,
                headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
                body: Array(form.utf8)
            )
        } catch let error as CurlError {
            throw AccessTokenError(code: .transport, message: "token endpoint unreachable: \(error)")
        }
        guard response.status == 200 else {
            let detail = OAuthErrorBody(response.body)
            let overloaded = response.status == 429 || response.status >= 500
            let code: AccessTokenError.Code = overloaded ? .unavailable : .rejected
            logger.warning(
                "token exchange refused",
                metadata: [
                    "status": "\(response.status)", "error": "\(detail.error ?? "-")",
                ])
            throw AccessTokenError(
                code: code,
                status: response.status,
                oauthError: detail.error,
                message: detail.description ?? "the token endpoint answered \(response.status)"
            )
        }
        guard let body = try? JSONDecoder().decode(TokenResponse.self, from: Data(response.body)),
            !body.accessToken.isEmpty, body.expiresIn > 0
        else {
            throw AccessTokenError(code: .malformedResponse, status: 200, message: "no access_token in the answer")
        }
        logger.debug("access token obtained", metadata: ["expires_in": "\(body.expiresIn)"])
        let lifetime = TimeInterval(body.expiresIn)
        let margin = min(TimeInterval(renewalMargin), lifetime / 2)
        return CachedToken(token: body.accessToken, renewAt: now.addingTimeInterval(lifetime - margin))
    }

    /// application/x-www-form-urlencoded: everything but unreserved characters percent-encoded.
    static func formEncode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )

    private struct CachedToken: Sendable {
        var token: String
        /// When to stop using it and get a new one.
        var renewAt: Date
    }

    private struct TokenResponse: Decodable {
        var accessToken: String
        var expiresIn: Int64

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
        }
    }

    /// RFC 6749 section 5.2: `{"error": "invalid_grant", "error_description": "..."}`.
    private struct OAuthErrorBody {
        var error: String?
        var description: String?

        init(_ body: [UInt8]) {
            let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            error = object?["error"] as? String
            description = object?["error_description"] as? String
        }
    }
}

/// No access token could be had from the token endpoint.
public struct AccessTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new codes may be added, so switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case rejected
            case unavailable
            case transport
            case malformedResponse
            case signingFailed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The endpoint refused the assertion (4xx, e.g. `invalid_grant` for a key it does not know).
        public static let rejected = Code(.rejected)
        /// The endpoint is overloaded or failing (429, 5xx): worth retrying later.
        public static let unavailable = Code(.unavailable)
        /// No answer: connection, TLS or timeout; worth retrying later.
        public static let transport = Code(.transport)
        /// An answer without a usable `access_token`.
        public static let malformedResponse = Code(.malformedResponse)
        /// The assertion could not be signed with the account's key.
        public static let signingFailed = Code(.signingFailed)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// The token endpoint's HTTP status, when it answered.
    public var status: Int?
    /// OAuth2's `error` field, e.g. `invalid_grant`.
    public var oauthError: String?
    /// The endpoint's `error_description` or our own words.
    public var message: String

    /// An error of `code`.
    public init(code: Code, status: Int? = nil, oauthError: String? = nil, message: String) {
        self.code = code
        self.status = status
        self.oauthError = oauthError
        self.message = message
    }

    /// Whether asking again later may succeed.
    public var isRetryable: Bool {
        code == .unavailable || code == .transport
    }

    /// A line for the log, without the assertion or the token.
    public var description: String {
        var text = "AccessTokenError(\(code)"
        if let status { text += ", status \(status)" }
        if let oauthError { text += ", \(oauthError)" }
        return text + "): " + message
    }
}

import Foundation
import Logging

/// Sends one FCM request body: the transport the outbox's policy (retries, deadlines) drives.
public protocol FCMSending: Sendable {
    /// Sends `request` and returns FCM's message name (`projects/{project}/messages/{id}`).
    /// - Throws: `FCMError`; its `isRetryable` and `retryAfter` say whether and when to try again.
    func send(_ request: FCMRequest) async throws -> String
}

/// The FCM HTTP v1 client: `POST {endpoint}/v1/projects/{project_id}/messages:send` with a bearer token from
/// the service account; a 401 renews the token and retries once.
public struct FCMClient: FCMSending {
    /// What sending does (`FCM_MODE`).
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Send for real.
        case send
        /// Send with `validate_only`: FCM checks each request and delivers nothing.
        case validate
        /// Send nothing; log each body (at debug: bodies hold the messages' text).
        case log
    }

    /// Where and how the client sends.
    public struct Configuration: Sendable, Hashable {
        /// FCM's real base URL.
        public static let defaultEndpoint = "https://fcm.googleapis.com"

        /// The base URL standing in for `https://fcm.googleapis.com` (`FCM_ENDPOINT`), without a trailing slash.
        public var endpoint: String
        /// Send, validate or log (`FCM_MODE`).
        public var mode: Mode
        /// The payload limit the mapping cuts text to.
        public var payloadLimit: Int

        /// A configuration; by default real FCM, sending, 2048-byte payloads.
        public init(
            endpoint: String = Configuration.defaultEndpoint,
            mode: Mode = .send,
            payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit
        ) {
            self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            self.mode = mode
            self.payloadLimit = payloadLimit
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The Firebase project, from the service account; nil for a log-only client without credentials.
    public let projectID: String?
    /// Authorised requests to FCM; nil for a log-only client. Shared with `topicSubscriptions`.
    let transport: FCMTransport?
    let logger: Logger

    /// A client sending for `account` through `httpClient`; `tokens` defaults to an `AccessTokenProvider`.
    public init(
        account: ServiceAccount,
        httpClient: CurlClient,
        configuration: Configuration = Configuration(),
        tokens: (any AccessTokenSource)? = nil,
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) {
        self.configuration = configuration
        self.projectID = account.projectID
        self.transport = FCMTransport(
            tokens: tokens ?? AccessTokenProvider(account: account, httpClient: httpClient, logger: logger),
            httpClient: httpClient,
            logger: logger
        )
        self.logger = logger
    }

    /// A client that only logs (`FCM_MODE=log`, or no credentials): it needs no account and sends nothing.
    public static func logOnly(
        configuration: Configuration = Configuration(mode: .log),
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) -> FCMClient {
        var configuration = configuration
        configuration.mode = .log
        return FCMClient(configuration: configuration, logger: logger)
    }

    private init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.projectID = nil
        self.transport = nil
        self.logger = logger
    }

    /// The mapping options that go with this client's mode and payload limit.
    public var mappingOptions: FCMMappingOptions {
        FCMMappingOptions(validateOnly: configuration.mode == .validate, payloadLimit: configuration.payloadLimit)
    }

    /// The request bodies of `message` for this client (the mapping with `mappingOptions`).
    public func requests(for message: RelayMessage) -> [FCMRequest] {
        FCMMapping.requests(for: message, options: mappingOptions)
    }

    /// The URL messages are POSTed to.
    public var sendURL: String {
        "\(configuration.endpoint)/v1/projects/\(projectID ?? "-")/messages:send"
    }

    /// Sends one request body; in log mode logs it at debug instead and returns a made-up name.
    /// - Throws: `FCMError`: `.quotaExceeded`, `.unavailable`, `.internal`, `.timeout` and `.connectionFailed`
    ///   are retryable; `.invalidArgument`, `.senderIdMismatch`, `.notFound`, `.unregistered` (a token target
    ///   that is gone) and `.unauthenticated` are not.
    public func send(_ request: FCMRequest) async throws -> String {
        guard configuration.mode != .log, let transport else {
            // At debug: a body holds the message's text, which an info log (kept, shipped) must not.
            logger.debug("fcm log mode: not sent", metadata: [
                "component": "\(request.component.rawValue)",
                "body": "\(String(decoding: request.body, as: UTF8.self))",
            ])
            return "projects/\(projectID ?? "log")/messages/log-\(UUID().uuidString.lowercased())"
        }
        let body = configuration.mode == .validate ? Self.forcingValidateOnly(request.body) : request.body
        let response = try await transport.perform(
            .post(body), url: sendURL, metadata: ["component": "\(request.component)"])
        guard response.status == 200 else {
            let error = FCMError(response: response)
            logger.debug("fcm refused a request", metadata: ["error": "\(error)", "component": "\(request.component)"])
            throw error
        }
        return try Self.messageName(response)
    }

    /// `{"name": "projects/.../messages/..."}` from a 200 answer.
    private static func messageName(_ response: CurlResponse) throws -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        guard let name = object?["name"] as? String, !name.isEmpty else {
            throw FCMError(code: .other, httpStatus: 200, message: "FCM's answer has no message name",
                           isRetryable: false)
        }
        return name
    }

    /// The body with `validate_only: true`, whatever the mapping was told: validate mode never delivers.
    private static func forcingValidateOnly(_ body: [UInt8]) -> [UInt8] {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return body
        }
        if object["validate_only"] as? Bool == true { return body }
        object["validate_only"] = true
        return (try? JSONSerialization.data(withJSONObject: object)).map(Array.init) ?? body
    }
}

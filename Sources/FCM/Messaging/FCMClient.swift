import Curl
import Foundation
import Logging

/// Sends one FCM request body: the transport the outbox's policy (retries, deadlines) drives.
public protocol FCMSending: Sendable {
    /// Sends `request` and returns FCM's message name (`projects/{project}/messages/{id}`).
    /// - Throws: `FCMError`; its `isRetryable` and `retryAfter` say whether and when to try again.
    func send(_ request: FCMRequest) async throws -> String
}

extension FCMSending {
    /// FCM's answer to `request` as a value, for the relay's classifier: the message's name, or the `FCMError` (any
    /// other error as a retryable `.other`).
    public func answer(_ request: FCMRequest) async -> Result<String, FCMError> {
        do {
            return .success(try await send(request))
        } catch {
            return .failure(error as? FCMError ?? FCMError(code: .other, message: "\(error)", isRetryable: true))
        }
    }
}

/// The FCM HTTP v1 client: `POST {endpoint}/v1/projects/{project_id}/messages:send` with a bearer token from
/// the service account; a 401 renews the token and retries once. Sends and topic subscription calls go through one
/// `CurlMultiClient` (hundreds of HTTP/2 streams on a few connections); the token endpoint through the pooled
/// `CurlClient`.
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
        /// Speak HTTP/2 without TLS to an `http://` endpoint (h2c, a local stand-in; `FCM_HTTP2_PRIOR_KNOWLEDGE`).
        /// An `https://` endpoint gets HTTP/2 by ALPN whatever this says.
        public var http2PriorKnowledge: Bool

        /// A configuration; by default real FCM, sending, 2048-byte payloads.
        public init(
            endpoint: String = Configuration.defaultEndpoint,
            mode: Mode = .send,
            payloadLimit: Int = FCMMappingOptions.defaultPayloadLimit,
            http2PriorKnowledge: Bool = false
        ) {
            self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            self.mode = mode
            self.payloadLimit = payloadLimit
            self.http2PriorKnowledge = http2PriorKnowledge
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The Firebase project, from the service account; nil for a log-only client without credentials.
    public let projectID: String?
    /// Authorised requests to FCM; nil for a log-only client. Shared with `topicSubscriptions`.
    let transport: FCMTransport?
    /// The multiplexing client requests to FCM go through; nil for a log-only client.
    let sender: CurlMultiClient?
    let logger: Logger

    /// A client sending for `account` through `sender` (by default a new `CurlMultiClient` with `httpClient`'s
    /// timeouts and `configuration.http2PriorKnowledge`); `httpClient` serves the token endpoint, and `tokens`
    /// defaults to an `AccessTokenProvider` on it. To an endpoint that can only be HTTP/1.1 (plain `http://`
    /// without prior knowledge) the default sender opens as many connections as `httpClient` has threads, the
    /// parallelism requests had before they were multiplexed; over HTTP/2 it keeps to 4.
    public init(
        account: ServiceAccount,
        httpClient: CurlClient,
        sender: CurlMultiClient? = nil,
        configuration: Configuration = Configuration(),
        tokens: (any AccessTokenSource)? = nil,
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) {
        let onlyHTTP1 = !configuration.http2PriorKnowledge && configuration.endpoint.lowercased().hasPrefix("http://")
        var multiplexing = CurlMultiClient.Configuration(http2PriorKnowledge: configuration.http2PriorKnowledge)
        multiplexing.maxConnectionsPerHost = onlyHTTP1 ? max(4, httpClient.configuration.threads) : 4
        multiplexing.connectTimeout = httpClient.configuration.connectTimeout
        multiplexing.requestTimeout = httpClient.configuration.requestTimeout
        multiplexing.maxResponseBytes = httpClient.configuration.maxResponseBytes
        let sender = sender ?? CurlMultiClient(configuration: multiplexing)
        self.configuration = configuration
        self.projectID = account.projectID
        self.sender = sender
        self.transport = FCMTransport(
            tokens: tokens ?? AccessTokenProvider(account: account, httpClient: httpClient, logger: logger),
            httpClient: sender,
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
        self.sender = nil
        self.logger = logger
    }

    /// Stops the multiplexing client's thread once the requests under way have ended (the pooled `CurlClient` is
    /// its owner's to shut down). Without it the thread stops when the last copy of the client goes.
    public func shutdown() async {
        await sender?.shutdown()
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
            // At debug: a body holds the message's text, which an info log (kept, shipped) must not. A device's
            // body names its registration token, a credential: it is never logged, only its size.
            var metadata: Logger.Metadata = ["component": "\(request.component.rawValue)"]
            if request.component == .device {
                metadata["payload_bytes"] = "\(request.payloadSize)"
            } else {
                metadata["body"] = "\(String(decoding: request.body, as: UTF8.self))"
            }
            logger.debug("fcm log mode: not sent", metadata: metadata)
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
            throw FCMError(
                code: .other, httpStatus: 200, message: "FCM's answer has no message name",
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

import Curl
import Foundation
import Logging

/// FCM's topic subscription API, the server-side replacement of the Instance ID API (never call
/// `iid.googleapis.com`): subscribe a registration token to a topic, unsubscribe it, list its topics.
///
/// It shares its configuration, access tokens and HTTP client with the `FCMClient` it comes from
/// (`FCMClient.topicSubscriptions`). In `log` mode it calls nothing and succeeds; `validate` mode changes only
/// sends, so subscription calls are made for real. Creating what exists and deleting what is missing succeed
/// (`.alreadyApplied`), so every call can be repeated.
public struct FCMTopicSubscriptions: Sendable {
    /// What a subscribe or unsubscribe changed.
    public enum Outcome: Sendable, Hashable {
        /// FCM made the change.
        case applied
        /// FCM already had it that way: the subscription existed (409) or was already gone (404).
        case alreadyApplied
    }

    /// The largest page FCM lists, and the one `topics(of:)` asks for.
    public static let maxPageSize = 2000

    /// The configuration of the client it comes from: the endpoint and the mode.
    public let configuration: FCMClient.Configuration
    /// The Firebase project; nil for a log-only client without credentials.
    public let projectID: String?
    private let transport: FCMTransport?
    private let logger: Logger

    /// The subscription calls for `account` through `httpClient`; `tokens` defaults to an
    /// `AccessTokenProvider`. Prefer `FCMClient.topicSubscriptions`, which shares the client's token cache.
    public init(
        account: ServiceAccount,
        httpClient: CurlClient,
        configuration: FCMClient.Configuration = FCMClient.Configuration(),
        tokens: (any AccessTokenSource)? = nil,
        logger: Logger = Logger(label: "msi-hub.relay.fcm")
    ) {
        self =
            FCMClient(
                account: account, httpClient: httpClient, configuration: configuration, tokens: tokens, logger: logger
            ).topicSubscriptions
    }

    init(configuration: FCMClient.Configuration, projectID: String?, transport: FCMTransport?, logger: Logger) {
        self.configuration = configuration
        self.projectID = projectID
        self.transport = transport
        self.logger = logger
    }

    /// The collection of `registration`'s subscriptions:
    /// `{endpoint}/v1/projects/{project}/registrations/{registration}/topicSubscriptions`.
    public func subscriptionsURL(registration: String) -> String {
        "\(configuration.endpoint)/v1/projects/\(Self.percentEncoded(projectID ?? "-"))/registrations/"
            + "\(Self.percentEncoded(registration))/topicSubscriptions"
    }

    /// Subscribes `registration` to `topic`.
    /// - Returns: `.applied`, or `.alreadyApplied` when it was subscribed already (FCM's 409).
    /// - Throws: `FCMError`: `.unregistered` when the registration is gone; `.quotaExceeded`, `.unavailable`,
    ///   `.internal`, `.timeout`, `.connectionFailed` (retryable, with `retryAfter` when FCM gave one);
    ///   `.invalidArgument` for a topic name FCM refuses, `.unauthenticated`, `.senderIdMismatch`.
    @discardableResult
    public func subscribe(registration: String, topic: String) async throws -> Outcome {
        guard let transport = live(.subscribe, registration: registration, topic: topic) else { return .applied }
        let url = subscriptionsURL(registration: registration) + "?topic_name=" + Self.percentEncoded(topic)
        let response = try await transport.perform(.post(Array("{}".utf8)), url: url, metadata: ["topic": "\(topic)"])
        switch response.status {
        case 200: return .applied
        case 409: return .alreadyApplied
        default: throw refusal(response, notFound: .unregistered, topic: topic)
        }
    }

    /// Unsubscribes `registration` from `topic`.
    /// - Returns: `.applied`, or `.alreadyApplied` when it was not subscribed (FCM's 404 `NOT_FOUND`).
    /// - Throws: `FCMError`, as `subscribe`; `.unregistered` only when FCM says `UNREGISTERED`.
    @discardableResult
    public func unsubscribe(registration: String, topic: String) async throws -> Outcome {
        guard let transport = live(.unsubscribe, registration: registration, topic: topic) else { return .applied }
        let url = subscriptionsURL(registration: registration) + "/" + Self.percentEncoded(topic)
        let response = try await transport.perform(.delete, url: url, metadata: ["topic": "\(topic)"])
        if response.status == 200 { return .applied }
        let error = refusal(response, notFound: .notFound, topic: topic)
        if error.code == .notFound { return .alreadyApplied }
        throw error
    }

    /// The topics `registration` is subscribed to, in FCM's order, following every page.
    /// - Throws: `FCMError`, as `subscribe`; `.other` for an answer that is not a page of subscriptions.
    public func topics(of registration: String) async throws -> [String] {
        guard let transport = live(.list, registration: registration, topic: nil) else { return [] }
        var topics: [String] = []
        var pageToken: String?
        var seenTokens: Set<String> = []
        repeat {
            var url = subscriptionsURL(registration: registration) + "?pageSize=\(Self.maxPageSize)"
            if let pageToken { url += "&pageToken=" + Self.percentEncoded(pageToken) }
            let response = try await transport.perform(.get, url: url)
            guard response.status == 200 else { throw refusal(response, notFound: .unregistered, topic: nil) }
            let page = try SubscriptionPage(response)
            topics.append(contentsOf: page.topics)
            pageToken = page.nextPageToken
            if let pageToken, !seenTokens.insert(pageToken).inserted {
                throw FCMError(
                    code: .other, httpStatus: 200, message: "FCM repeated a page token",
                    isRetryable: false)
            }
        } while pageToken != nil
        return topics
    }

    private enum Call: String {
        case subscribe, unsubscribe, list
    }

    /// The transport for a real call, or nil in log mode after logging what would have been called.
    private func live(_ call: Call, registration: String, topic: String?) -> FCMTransport? {
        guard configuration.mode == .log || transport == nil else { return transport }
        logger.debug(
            "fcm log mode: no subscription call",
            metadata: [
                "call": "\(call.rawValue)",
                "topic": "\(topic ?? "-")",
                "registration": "\(registration.prefix(8))…",
            ])
        return nil
    }

    private func refusal(_ response: CurlResponse, notFound: FCMError.Code, topic: String?) -> FCMError {
        let error = FCMError(response: response, notFound: notFound)
        logger.debug("fcm refused a subscription call", metadata: ["error": "\(error)", "topic": "\(topic ?? "-")"])
        return error
    }

    /// A path segment or query value: everything but RFC 3986's unreserved characters percent-encoded, so a
    /// registration's `:` and a topic's `%` arrive as they are.
    static func percentEncoded(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}

extension FCMClient {
    /// The topic subscription calls with this client's endpoint, mode, project, access tokens and HTTP client.
    public var topicSubscriptions: FCMTopicSubscriptions {
        FCMTopicSubscriptions(configuration: configuration, projectID: projectID, transport: transport, logger: logger)
    }
}

/// One page of `GET …/topicSubscriptions`: `{"topicSubscriptions": [{"name", "topic_name", "create_time"}],
/// "nextPageToken": "…"}`.
private struct SubscriptionPage {
    var topics: [String]
    var nextPageToken: String?

    init(_ response: CurlResponse) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
            let subscriptions = (object["topicSubscriptions"] ?? [Any]()) as? [[String: Any]]
        else {
            throw FCMError(
                code: .other, httpStatus: 200, message: "FCM's answer is not a page of subscriptions",
                isRetryable: false)
        }
        let topics = subscriptions.compactMap { $0["topic_name"] as? String }
        guard topics.count == subscriptions.count else {
            throw FCMError(
                code: .other, httpStatus: 200, message: "FCM listed a subscription without a topic",
                isRetryable: false)
        }
        self.topics = topics
        let token = object["nextPageToken"] as? String
        nextPageToken = token?.isEmpty == false ? token : nil
    }
}

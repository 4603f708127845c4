import Foundation
import Hummingbird

/// FCM's topic subscription API (the server-side replacement of the Instance ID API), as the fake plays it:
/// `…/registrations/{registration}/topicSubscriptions`, with the bearer-token check of messages:send.
extension FakeFCMState {
    /// The default page of a list call.
    static let defaultPageSize = 100
    /// The largest page of a list call; larger requests get this many.
    static let maxPageSize = 2000

    /// One call to the subscription API.
    enum SubscriptionCall {
        /// `POST …/topicSubscriptions?topic_name={topic}`.
        case create(topic: String?)
        /// `DELETE …/topicSubscriptions/{topic}`.
        case delete(topic: String)
        /// `GET …/topicSubscriptions?pageSize=&pageToken=`.
        case list(pageSize: String?, pageToken: String?)
    }

    /// Answers `call` for `registration` in `project`: the checks of every call (token, project, injected
    /// failures, `UNREGISTERED`), then the call itself.
    func subscriptionCall(
        _ call: SubscriptionCall,
        project: String,
        registration: String,
        authorization: String?
    ) -> Response {
        let now = Date()
        return withState { state -> Response in
            state.subscriptionCalls += 1
            state.subscriptionCallsPerSecond[Int64(now.timeIntervalSince1970.rounded(.down)), default: 0] += 1
            state.subscriptionCallTimes.append(now)
            guard Self.isAuthorized(authorization, state: state, now: now) else {
                return Self.unauthenticated()
            }
            guard project == projectID else {
                return Self.notFound()
            }
            if let outage = state.subscriptionOutage, now < outage.until {
                return Self.injected(outage.status, retryAfter: outage.retryAfter)
            }
            if state.subscriptionFailures.remaining > 0 {
                state.subscriptionFailures.remaining -= 1
                return Self.injected(
                    state.subscriptionFailures.status, retryAfter: state.subscriptionFailures.retryAfter)
            }
            if state.unregistered.contains(registration) {
                return Self.unregistered()
            }
            let name = "projects/\(project)/registrations/\(registration)/topicSubscriptions"
            switch call {
            case .create(let topic):
                guard let topic, FCMValidation.isTopicName(topic) else {
                    return Self.invalidArgument("Invalid topic name: must match [a-zA-Z0-9-_.~%]{1,900}.")
                }
                guard state.subscribe(registration, to: topic, at: now) else {
                    return Self.googleError(
                        409, status: "ALREADY_EXISTS", message: "Topic subscription already exists.",
                        fcmErrorCode: nil)
                }
                return Self.json(200, Self.subscription(name: name, topic: topic, created: now))
            case .delete(let topic):
                guard FCMValidation.isTopicName(topic) else {
                    return Self.invalidArgument("Invalid topic name: must match [a-zA-Z0-9-_.~%]{1,900}.")
                }
                guard state.unsubscribe(registration, from: topic) else {
                    return Self.notFound()
                }
                return Self.json(200, [String: Any]())
            case .list(let pageSize, let pageToken):
                return Self.page(
                    of: state.subscriptions[registration] ?? [:], name: name, pageSize: pageSize,
                    pageToken: pageToken)
            }
        }
    }

    /// One page of `subscriptions`, in the order of their topic names; the page token is the last topic
    /// listed, base64url-encoded, so a page stays right when subscriptions change between calls.
    private static func page(
        of subscriptions: [String: Date],
        name: String,
        pageSize: String?,
        pageToken: String?
    ) -> Response {
        var size = defaultPageSize
        if let pageSize {
            guard let requested = Int(pageSize), requested >= 0 else {
                return invalidArgument("Invalid value at 'page_size' (TYPE_INT32), \"\(pageSize)\"")
            }
            size = requested == 0 ? defaultPageSize : min(requested, maxPageSize)
        }
        var after: String?
        if let pageToken, !pageToken.isEmpty {
            guard let data = base64URLDecode(pageToken[...]), let topic = String(data: data, encoding: .utf8) else {
                return invalidArgument("Invalid page token.")
            }
            after = topic
        }
        let remaining = subscriptions.sorted { $0.key < $1.key }.filter { topic, _ in after.map { topic > $0 } ?? true }
        let shown = remaining.prefix(size)
        var body: [String: Any] = [
            "topicSubscriptions": shown.map { subscription(name: name, topic: $0.key, created: $0.value) }
        ]
        if remaining.count > shown.count, let last = shown.last {
            body["nextPageToken"] = base64URLEncode(Data(last.key.utf8))
        }
        return json(200, body)
    }

    /// `{"name": "{collection}/{topic}", "topic_name": topic, "create_time": RFC 3339}`.
    private static func subscription(name collection: String, topic: String, created: Date) -> [String: Any] {
        [
            "name": "\(collection)/\(topic)",
            "topic_name": topic,
            "create_time": created.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)),
        ]
    }
}

extension FakeFCM {
    private static let subscriptionCollection = "/v1/projects/:project/registrations/:registration/topicSubscriptions"

    /// Adds the subscription API's routes and the fake's own `/_inbox` and `/_subscriptions` to `router`.
    static func addSubscriptionRoutes(to router: Router<BasicRequestContext>, state: FakeFCMState) {
        router.post(RouterPath(subscriptionCollection)) { request, context -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            let topic = request.uri.queryParameters.get("topic_name")
            return try await answer(.create(topic: topic), request, context, state)
        }
        router.delete(RouterPath(subscriptionCollection + "/:topic")) { request, context -> Response in
            try await answer(.delete(topic: decoded(context.parameters.get("topic"))), request, context, state)
        }
        router.get(RouterPath(subscriptionCollection)) { request, context -> Response in
            let query = request.uri.queryParameters
            let call = FakeFCMState.SubscriptionCall.list(
                pageSize: query.get("pageSize"),
                pageToken: query.get("pageToken"))
            return try await answer(call, request, context, state)
        }
        // Not FCM: a simulated phone fetches (and so removes) the messages delivered to its registration.
        router.get("/_inbox/:registration") { _, context -> Response in
            let messages = state.drainInbox(decoded(context.parameters.get("registration")))
            return FakeFCMState.json(200, ["messages": messages.map(\.json)])
        }
        // Not FCM: how many subscriptions the fake holds, how many subscription calls it saw, and the most it saw
        // within one Unix second, cheap enough for a bench to poll (`{"subscriptions", "calls", "peak_calls_per_second"}`).
        router.get("/_subscriptions") { _, _ -> Response in
            let (held, calls, peak) = state.withState {
                (
                    $0.subscriptions.values.reduce(0) { $0 + $1.count }, $0.subscriptionCalls,
                    $0.subscriptionCallsPerSecond.values.max() ?? 0
                )
            }
            return FakeFCMState.json(200, ["subscriptions": held, "calls": calls, "peak_calls_per_second": peak])
        }
        // Not FCM: a registration's topics, in order, for scripts.
        router.get("/_subscriptions/:registration") { _, context -> Response in
            let registration = decoded(context.parameters.get("registration"))
            let topics = state.withState { $0.subscriptions[registration]?.keys.sorted() ?? [] }
            return FakeFCMState.json(200, ["topics": topics])
        }
    }

    private static func answer(
        _ call: FakeFCMState.SubscriptionCall,
        _ request: Request,
        _ context: BasicRequestContext,
        _ state: FakeFCMState
    ) async throws -> Response {
        if let delay = state.responseDelay { try await Task.sleep(for: delay) }
        return state.subscriptionCall(
            call,
            project: decoded(context.parameters.get("project")),
            registration: decoded(context.parameters.get("registration")),
            authorization: request.headers[.authorization]
        )
    }

    /// A path parameter percent-decoded (the router hands them out as sent).
    private static func decoded(_ parameter: String?) -> String {
        let raw = parameter ?? ""
        return raw.removingPercentEncoding ?? raw
    }
}

extension FakeFCMState {
    /// Removes and returns `registration`'s delivered messages, oldest first.
    func drainInbox(_ registration: String) -> [FakeFCMDelivery] {
        withState { $0.inboxes.removeValue(forKey: registration) ?? [] }
    }
}

import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import _CryptoExtras

/// One messages:send request the fake accepted.
public struct FakeFCMRequest: Sendable {
    /// The project in the URL.
    public var project: String
    /// The JSON body as received.
    public var body: [UInt8]
    /// When it arrived (before any latency the fake adds).
    public var receivedAt: Date
    /// When the fake answered it (after the latency).
    public var answeredAt: Date
    /// Whether it asked for `validate_only`.
    public var validateOnly: Bool
    /// The message name the fake answered with.
    public var name: String

    /// The body's `message` object.
    public var message: [String: Any] {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        return object?["message"] as? [String: Any] ?? [:]
    }

    /// The body's `message.data` object (FCM requires its values to be strings).
    public var data: [String: String] {
        message["data"] as? [String: String] ?? [:]
    }
}

/// The fake's state, behind one lock: the handlers run on NIO's event loops, the test on its own tasks.
final class FakeFCMState: Sendable {
    struct InjectedFailure {
        var remaining: Int
        var status: Int
        var retryAfter: String?
    }

    struct State {
        /// The fake's own token endpoint: the audience assertions must name.
        var tokenURI = ""
        var trusted: [String: _RSA.Signing.PublicKey] = [:]
        var tokenLifetime = 3599
        /// Issued access tokens and when each expires.
        var tokens: [String: Date] = [:]
        var tokenFailures: (remaining: Int, status: Int) = (0, 0)
        var tokenExchanges = 0
        var tokensIssued = 0
        var sendFailures = InjectedFailure(remaining: 0, status: 0)
        /// Every send with a valid token fails so until this time (an outage), whatever `sendFailures` says.
        var outage: (until: Date, status: Int, retryAfter: String?)?
        /// messages:send requests received and not yet answered.
        var sendsInFlight = 0
        /// The most messages:send requests that were in flight at once.
        var mostSendsInFlight = 0
        /// messages:send requests that came over HTTP/2.
        var sendsOverHTTP2 = 0
        /// Connections open now, HTTP/1.1 or HTTP/2.
        var openConnections = 0
        /// Connections accepted so far.
        var connectionsOpened = 0
        /// The most connections that were open at once.
        var mostOpenConnections = 0
        var responseDelay: Duration?
        var received: [FakeFCMRequest] = []
        var sendCalls = 0
        var unauthorizedCalls = 0
        var sendStatuses: [Int] = []
        /// Each registration's topics and when it subscribed to each.
        var subscriptions: [String: [String: Date]] = [:]
        /// The same subscriptions by topic, for delivery.
        var subscribers: [String: Set<String>] = [:]
        /// Registrations that answer 404 `UNREGISTERED`.
        var unregistered: Set<String> = []
        var subscriptionFailures = InjectedFailure(remaining: 0, status: 0)
        /// Every subscription call with a valid token fails so until this time, whatever `subscriptionFailures` says.
        var subscriptionOutage: (until: Date, status: Int, retryAfter: String?)?
        var subscriptionCalls = 0
        /// Subscription calls by the Unix second they arrived in.
        var subscriptionCallsPerSecond: [Int64: Int] = [:]
        /// When each subscription call arrived, in order.
        var subscriptionCallTimes: [Date] = []
        /// The messages delivered to each registration and not yet fetched.
        var inboxes: [String: [FakeFCMDelivery]] = [:]

        /// Adds the subscription; false when it existed.
        mutating func subscribe(_ registration: String, to topic: String, at time: Date) -> Bool {
            guard subscriptions[registration, default: [:]][topic] == nil else { return false }
            subscriptions[registration, default: [:]][topic] = time
            subscribers[topic, default: []].insert(registration)
            return true
        }

        /// Removes the subscription; false when there was none.
        mutating func unsubscribe(_ registration: String, from topic: String) -> Bool {
            guard subscriptions[registration]?.removeValue(forKey: topic) != nil else { return false }
            if subscriptions[registration]?.isEmpty == true { subscriptions[registration] = nil }
            subscribers[topic]?.remove(registration)
            if subscribers[topic]?.isEmpty == true { subscribers[topic] = nil }
            return true
        }
        /// When each messages:send answer was made, and its status.
        var sendLog: [(at: Date, status: Int)] = []
    }

    let projectID: String
    let payloadLimit: Int
    private let state = NIOLockedValueBox(State())

    init(projectID: String, payloadLimit: Int) {
        self.projectID = projectID
        self.payloadLimit = payloadLimit
    }

    func withState<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLockedValue(body)
    }

    /// Counts a connection the server accepted.
    func connectionOpened() {
        withState { state in
            state.openConnections += 1
            state.connectionsOpened += 1
            state.mostOpenConnections = max(state.mostOpenConnections, state.openConnections)
        }
    }

    /// Counts a connection that closed.
    func connectionClosed() {
        withState { $0.openConnections -= 1 }
    }

    /// Counts a messages:send request that arrived; `sendEnded()` when it is answered.
    func sendStarted(overHTTP2: Bool) {
        withState { state in
            if overHTTP2 { state.sendsOverHTTP2 += 1 }
            state.sendsInFlight += 1
            state.mostSendsInFlight = max(state.mostSendsInFlight, state.sendsInFlight)
        }
    }

    /// Counts a messages:send request answered (or abandoned).
    func sendEnded() {
        withState { $0.sendsInFlight -= 1 }
    }

    func trust(clientEmail: String, publicKey: _RSA.Signing.PublicKey) {
        withState { $0.trusted[clientEmail] = publicKey }
    }

    var responseDelay: Duration? { withState { $0.responseDelay } }

    // MARK: Answers

    static func json(_ status: Int, _ object: Any, headers extra: HTTPFields = [:]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        headers.append(contentsOf: extra)
        return Response(
            status: .init(code: status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    /// Google's error body: `{"error": {"code", "message", "status", "details": [FcmError]}}`.
    static func googleError(
        _ code: Int,
        status: String,
        message: String,
        fcmErrorCode: String?,
        retryAfter: String? = nil
    ) -> Response {
        var error: [String: Any] = ["code": code, "message": message, "status": status]
        if let fcmErrorCode {
            error["details"] = [
                [
                    "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                    "errorCode": fcmErrorCode,
                ]
            ]
        }
        var headers: HTTPFields = [:]
        if let retryAfter { headers[.retryAfter] = retryAfter }
        return json(code, ["error": error], headers: headers)
    }

    /// The error FCM gives for `status`, as the fake's failure injection sends it.
    static func injected(_ status: Int, retryAfter: String?) -> Response {
        switch status {
        case 400:
            googleError(
                400, status: "INVALID_ARGUMENT", message: "Request contains an invalid argument.",
                fcmErrorCode: "INVALID_ARGUMENT", retryAfter: retryAfter)
        case 401:
            unauthenticated()
        case 403:
            googleError(
                403, status: "PERMISSION_DENIED", message: "SenderId mismatch",
                fcmErrorCode: "SENDER_ID_MISMATCH", retryAfter: retryAfter)
        case 404:
            // A generic 404; `markUnregistered` gives the `UNREGISTERED` one.
            googleError(
                404, status: "NOT_FOUND", message: "Requested entity was not found.",
                fcmErrorCode: nil, retryAfter: retryAfter)
        case 429:
            googleError(
                429, status: "RESOURCE_EXHAUSTED", message: "Quota exceeded for quota metric.",
                fcmErrorCode: "QUOTA_EXCEEDED", retryAfter: retryAfter)
        case 500:
            googleError(
                500, status: "INTERNAL", message: "Internal error encountered.",
                fcmErrorCode: "INTERNAL", retryAfter: retryAfter)
        case 503:
            googleError(
                503, status: "UNAVAILABLE", message: "The service is currently unavailable.",
                fcmErrorCode: "UNAVAILABLE", retryAfter: retryAfter)
        default:
            googleError(
                status, status: "UNKNOWN", message: "Injected failure.", fcmErrorCode: nil,
                retryAfter: retryAfter)
        }
    }

    static func unauthenticated() -> Response {
        googleError(
            401,
            status: "UNAUTHENTICATED",
            message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie "
                + "or other valid authentication credential.",
            fcmErrorCode: nil
        )
    }

    static func invalidArgument(_ message: String) -> Response {
        googleError(400, status: "INVALID_ARGUMENT", message: message, fcmErrorCode: "INVALID_ARGUMENT")
    }

    /// FCM's answer for a registration token that is gone: 404 with the `UNREGISTERED` detail.
    static func unregistered() -> Response {
        googleError(
            404, status: "NOT_FOUND", message: "Requested entity was not found.",
            fcmErrorCode: "UNREGISTERED")
    }

    /// A 404 without an `FcmError` detail: no such project or entity.
    static func notFound() -> Response {
        googleError(404, status: "NOT_FOUND", message: "Requested entity was not found.", fcmErrorCode: nil)
    }

    /// Whether `authorization` is `Bearer` and a token the fake issued that has not expired.
    static func isAuthorized(_ authorization: String?, state: State, now: Date) -> Bool {
        guard let authorization, authorization.hasPrefix("Bearer "),
            let expiry = state.tokens[String(authorization.dropFirst("Bearer ".count))]
        else { return false }
        return expiry > now
    }

    // MARK: messages:send

    func send(project: String, authorization: String?, body: [UInt8], arrivedAt: Date? = nil) -> Response {
        let now = Date()
        // When the request came, before any latency the fake adds: what FCM's quota counts (`receivedAt`, `sendLog`).
        let arrived = arrivedAt ?? now
        let response = withState { state -> Response in
            state.sendCalls += 1
            guard Self.isAuthorized(authorization, state: state, now: now) else {
                state.unauthorizedCalls += 1
                return Self.unauthenticated()
            }
            guard project == projectID else {
                return Self.notFound()
            }
            if let outage = state.outage, now < outage.until {
                return Self.injected(outage.status, retryAfter: outage.retryAfter)
            }
            if state.sendFailures.remaining > 0 {
                state.sendFailures.remaining -= 1
                return Self.injected(state.sendFailures.status, retryAfter: state.sendFailures.retryAfter)
            }
            let validateOnly: Bool
            switch FCMValidation.validate(body: body, payloadLimit: payloadLimit) {
            case .failure(let problem):
                return Self.invalidArgument(problem.message)
            case .success(let flag):
                validateOnly = flag
            }
            let sent = SentMessage(body: body)
            if let token = sent.token, state.unregistered.contains(token) {
                return Self.unregistered()
            }
            let name =
                validateOnly
                ? "projects/\(project)/messages/fake_message_id"
                : "projects/\(project)/messages/0:\(state.received.count + 1)%fake"
            state.received.append(
                FakeFCMRequest(
                    project: project, body: body, receivedAt: arrived, answeredAt: now, validateOnly: validateOnly,
                    name: name))
            if !validateOnly {
                state.deliver(sent)
            }
            return Self.json(200, ["name": name])
        }
        withState {
            $0.sendStatuses.append(response.status.code)
            $0.sendLog.append((arrived, response.status.code))
        }
        return response
    }
}

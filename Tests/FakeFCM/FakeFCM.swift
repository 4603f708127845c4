import Foundation
import Hummingbird
import Logging
import NIOCore
import _CryptoExtras

/// A fake FCM for tests: Google's OAuth2 token endpoint, FCM HTTP v1's `messages:send` and its topic
/// subscription API on 127.0.0.1 and an ephemeral port, speaking the real protocol over real HTTP. It delivers
/// what it accepts to simulated phones: `drainInbox(_:)`, `GET /_inbox/{registration}`.
///
/// ```swift
/// let fake = try await FakeFCM.start()
/// let account = try fake.makeServiceAccount()        // a new RSA key, trusted by the fake, in a temp file
/// // ... point the client at fake.baseURL and account.path ...
/// await fake.stop()
/// ```
/// or `try await FakeFCM.with { fake in ... }`, which always stops it.
public final class FakeFCM: Sendable {
    /// The port the fake listens on.
    public let port: Int
    /// What the fake has seen and been told; shared with the request handlers.
    let state: FakeFCMState
    private let server: Task<Void, Never>

    /// `http://127.0.0.1:{port}`: the `FCM_ENDPOINT` to give the client.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// The token endpoint: the `token_uri` of service accounts the fake trusts.
    public var tokenURI: String { baseURL + "/token" }

    private init(port: Int, state: FakeFCMState, server: Task<Void, Never>) {
        self.port = port
        self.state = state
        self.server = server
    }

    /// Starts a fake serving project `projectID` on `port` (0: an ephemeral one); `payloadLimit` is FCM's payload
    /// limit in bytes (the sum of the UTF-8 sizes of the keys and values of `data`, plus `notification`'s title
    /// and body); `latency` delays every answer of messages:send and of the subscription calls, standing in for
    /// Google's round trip (as `setResponseDelay`). It speaks HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on
    /// the one port.
    /// - Throws: `FakeFCMError` when the server cannot start.
    public static func start(
        projectID: String = "msi-test",
        payloadLimit: Int = 4096,
        latency: Duration? = nil,
        port: Int = 0
    ) async throws -> FakeFCM {
        let state = FakeFCMState(projectID: projectID, payloadLimit: payloadLimit)
        state.withState { $0.responseDelay = latency }
        let router = Router()
        router.post("/token") { request, _ -> Response in
            let form = try await request.body.collect(upTo: 1 << 20)
            return state.token(form: String(buffer: form))
        }
        router.post("/v1/projects/:project/messages:send") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let arrived = Date()
            let project = context.parameters.get("project") ?? ""
            state.sendStarted(overHTTP2: request.headers[FakeFCMChannel.http2Field] != nil)
            defer { state.sendEnded() }
            if let delay = state.responseDelay { try await Task.sleep(for: delay) }
            return state.send(
                project: project,
                authorization: request.headers[.authorization],
                body: Array(buffer: body),
                arrivedAt: arrived
            )
        }
        // Not FCM: the bodies of the accepted messages:send requests, for tests that run the fake as a process.
        router.get("/_received") { _, _ -> Response in
            let bodies = state.withState { $0.received }.map {
                (try? JSONSerialization.jsonObject(with: Data($0.body))) ?? NSNull()
            }
            return FakeFCMState.json(200, bodies)
        }
        // Not FCM: echoes the request, for tests of the HTTP client itself.
        router.post("/echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            var headers: HTTPFields = [.contentType: "application/octet-stream"]
            for field in request.headers where field.name.rawName.lowercased().hasPrefix("x-") {
                headers[field.name] = field.value
            }
            let status = request.uri.queryParameters.get("status").flatMap { Int($0) } ?? 200
            if let milliseconds = request.uri.queryParameters.get("delay_ms").flatMap({ Int($0) }) {
                try await Task.sleep(for: .milliseconds(milliseconds))
            }
            return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: body))
        }
        // Not FCM: when each accepted messages:send request arrived (`[{"msi_key", "at_ms"}]`), for `make bench`'s lag.
        router.get("/_received/arrivals") { _, _ -> Response in
            let arrivals = state.withState { $0.received }.map { request -> [String: Any] in
                [
                    "msi_key": request.data["msi_key"] ?? "",
                    "at_ms": Int64(request.receivedAt.timeIntervalSince1970 * 1000),
                ]
            }
            return FakeFCMState.json(200, arrivals)
        }
        // Not FCM: how many messages:send requests were accepted (`{"count": N}`), cheap enough to poll.
        router.get("/_received/count") { _, _ -> Response in
            FakeFCMState.json(200, ["count": state.withState { $0.received.count }])
        }
        // Not FCM: the connections and the concurrency the fake has seen, for tests that run the fake as a process.
        router.get("/_stats") { _, _ -> Response in
            let stats = state.withState { state in
                [
                    "open_connections": state.openConnections, "connections_opened": state.connectionsOpened,
                    "most_open_connections": state.mostOpenConnections, "sends_in_flight": state.sendsInFlight,
                    "most_sends_in_flight": state.mostSendsInFlight, "send_calls": state.sendCalls,
                    "sends_over_http2": state.sendsOverHTTP2,
                ]
            }
            return FakeFCMState.json(200, stats)
        }
        addSubscriptionRoutes(to: router, state: state)

        var logger = Logger(label: "FakeFCM")
        logger.logLevel = .critical  // stopping by cancellation logs errors we expect
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            server: FakeFCMChannel.server(state: state),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "FakeFCM"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
            },
            logger: logger
        )
        let server = Task {
            // Ends when the task is cancelled (`stop()`), or at once when the server cannot start.
            try? await app.runService(gracefulShutdownSignals: [])
            portContinuation.finish()
        }
        for await port in ports where port > 0 {
            let fake = FakeFCM(port: port, state: state, server: server)
            state.withState { $0.tokenURI = fake.tokenURI }
            return fake
        }
        server.cancel()
        throw FakeFCMError(message: "the fake FCM server did not start")
    }

    /// Starts a fake, runs `body` with it and stops it, whether `body` returns or throws.
    /// - Throws: what `start` or `body` throws.
    public static func with<Result: Sendable>(
        projectID: String = "msi-test",
        payloadLimit: Int = 4096,
        latency: Duration? = nil,
        _ body: (FakeFCM) async throws -> Result
    ) async throws -> Result {
        let fake = try await start(projectID: projectID, payloadLimit: payloadLimit, latency: latency)
        do {
            let result = try await body(fake)
            await fake.stop()
            return result
        } catch {
            await fake.stop()
            throw error
        }
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        server.cancel()
        await server.value
    }

    // MARK: Service accounts and tokens

    /// Trusts assertions from `clientEmail` signed by the key whose public half is `publicKey`.
    public func trust(clientEmail: String, publicKey: _RSA.Signing.PublicKey) {
        state.trust(clientEmail: clientEmail, publicKey: publicKey)
    }

    /// A new service account for the fake's project, its key trusted by the fake, written to a temp file.
    /// - Throws: when the key cannot be made or the file written.
    public func makeServiceAccount(clientEmail: String? = nil) throws -> TestServiceAccount {
        let name = "relay-\(UUID().uuidString.prefix(8).lowercased())"
        let account = try TestServiceAccount.generate(
            tokenURI: tokenURI,
            projectID: state.projectID,
            clientEmail: clientEmail ?? "\(name)@\(state.projectID).iam.gserviceaccount.com"
        )
        trust(clientEmail: account.clientEmail, publicKey: account.publicKey)
        return account
    }

    /// Issues access tokens that say, and are held to, `seconds` of life (Google: 3599).
    public func setTokenLifetime(seconds: Int) {
        state.withState { $0.tokenLifetime = seconds }
    }

    /// Makes every token issued so far invalid, as if Google revoked them.
    public func revokeAllTokens() {
        state.withState { $0.tokens.removeAll() }
    }

    /// Makes the token endpoint answer the next `count` exchanges with `status` (an OAuth2 error body).
    public func failNextTokenExchanges(_ count: Int, status: Int) {
        state.withState { $0.tokenFailures = (count, status) }
    }

    /// The number of assertions presented at the token endpoint so far, accepted or not.
    public var tokenExchanges: Int { state.withState { $0.tokenExchanges } }
    /// The number of access tokens issued so far.
    public var tokensIssued: Int { state.withState { $0.tokensIssued } }

    // MARK: messages:send

    /// Makes the next `count` calls to messages:send that carry a valid token fail with `status` (429, 500, 503,
    /// 400, 403, 404) and an FCM-shaped error body, with `Retry-After: retryAfter` when given.
    public func failNext(_ count: Int, status: Int, retryAfter: String? = nil) {
        state.withState {
            $0.sendFailures = FakeFCMState.InjectedFailure(
                remaining: count, status: status, retryAfter: retryAfter)
        }
    }

    /// Makes every call to messages:send that carries a valid token fail with `status` and `Retry-After:
    /// retryAfter` for the next `duration`: an outage of FCM.
    public func failFor(_ duration: Duration, status: Int, retryAfter: String? = nil) {
        state.withState { $0.outage = (Date(after: duration), status, retryAfter) }
    }

    /// The messages:send requests received and not yet answered (answers wait for `setResponseDelay`).
    public var sendsInFlight: Int { state.withState { $0.sendsInFlight } }
    /// The most messages:send requests that were in flight at once.
    public var mostSendsInFlight: Int { state.withState { $0.mostSendsInFlight } }
    /// The messages:send requests that came over HTTP/2 (h2c), whatever the answer.
    public var sendsOverHTTP2: Int { state.withState { $0.sendsOverHTTP2 } }
    /// The connections open now, HTTP/1.1 or HTTP/2.
    public var openConnections: Int { state.withState { $0.openConnections } }
    /// The connections accepted so far.
    public var connectionsOpened: Int { state.withState { $0.connectionsOpened } }
    /// The most connections that were open at once.
    public var mostOpenConnections: Int { state.withState { $0.mostOpenConnections } }

    /// Delays every answer of messages:send and of the subscription calls by `delay` (nil: none).
    public func setResponseDelay(_ delay: Duration?) {
        state.withState { $0.responseDelay = delay }
    }

    /// The messages:send requests accepted so far (answered 200), in order of arrival.
    public var received: [FakeFCMRequest] { state.withState { $0.received } }
    /// Every call to messages:send so far, whatever the answer.
    public var sendCalls: Int { state.withState { $0.sendCalls } }
    /// The calls to messages:send answered 401 so far.
    public var unauthorizedCalls: Int { state.withState { $0.unauthorizedCalls } }
    /// When each messages:send answer was made (after any response delay) and its status, in order.
    public var sendLog: [(at: Date, status: Int)] { state.withState { $0.sendLog } }
    /// The statuses of every messages:send answer so far, in order.
    public var sendStatuses: [Int] { state.withState { $0.sendStatuses } }
}

/// The fake could not do what a test asked.
public struct FakeFCMError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension Date {
    /// `duration` from now: when an injected outage ends.
    init(after duration: Duration) {
        self = Date().addingTimeInterval(
            Double(duration.components.seconds)
                + Double(duration.components.attoseconds) / 1e18)
    }
}

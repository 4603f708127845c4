import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// A small OpenID provider on loopback for the tests, the browser tests and the README's walk: discovery, a JWKS
/// (one P-256 key), an authorization endpoint that signs in the configured user without a password page (PKCE S256
/// required), a token endpoint (each code once, for its redirect URI and verifier, client secret by Basic or form),
/// and an end-session endpoint. Knobs make it refuse (`denyNext`), send a tampered id_token (`tamperNext`) or name
/// another token endpoint in its discovery document.
public final class FakeOIDC: Sendable {
    public let port: Int
    let state: FakeOIDCState
    private let server: Task<Void, Never>

    /// The issuer: `http://127.0.0.1:<port>`.
    public var issuer: String { "http://127.0.0.1:\(port)" }
    public var clientID: String { state.clientID }

    private init(port: Int, state: FakeOIDCState, server: Task<Void, Never>) {
        self.port = port
        self.state = state
        self.server = server
    }

    /// Starts the provider for the client `clientID` (with `clientSecret`, or a public client) on `port` (0: any).
    public static func start(clientID: String = "msi-hub", clientSecret: String? = "test-client-secret", port: Int = 0)
        async throws -> FakeOIDC
    {
        let state = FakeOIDCState(clientID: clientID, clientSecret: clientSecret)
        let router = Router()
        router.get("/.well-known/openid-configuration") { _, _ in Self.json(200, state.discovery()) }
        router.get("/jwks") { _, _ in Self.json(200, state.jwks()) }
        router.get("/authorize") { request, _ -> Response in
            var query: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
            let answer = state.authorize(query)
            guard let location = answer.location else {
                return Response(
                    status: .init(code: answer.status), headers: [.contentType: "text/plain"],
                    body: .init(byteBuffer: ByteBuffer(string: answer.text)))
            }
            return Response(status: .found, headers: [.location: location])
        }
        router.post("/token") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            let answer = await state.token(
                form: Self.form(body.getString(at: body.readerIndex, length: body.readableBytes) ?? ""),
                authorization: request.headers[.authorization])
            return Self.json(answer.status, answer.body)
        }
        router.get("/logout") { request, _ -> Response in
            state.withValues { $0.endSessions += 1 }
            let target = request.uri.queryParameters.get("post_logout_redirect_uri").map { String($0) }
            guard let target else { return Response(status: .ok) }
            return Response(status: .found, headers: [.location: target])
        }
        // Not OIDC: who the next sign-in is (`{"sub", "email", "groups", "name"}`), for the browser tests.
        router.post("/_user") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                let email = object["email"] as? String
            else { return Self.json(400, ["error": "want {\"email\", \"groups\"}"]) }
            let user = FakeOIDCUser(
                subject: object["sub"] as? String ?? email, email: email,
                groups: object["groups"] as? [String] ?? [], name: object["name"] as? String ?? email)
            state.withValues { $0.user = user }
            return Self.json(200, ["ok": true])
        }

        var logger = Logger(label: "FakeOIDC")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "FakeOIDC"),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) },
            logger: logger)
        let server = Task {
            try? await app.runService(gracefulShutdownSignals: [])
            continuation.finish()
        }
        for await port in ports where port > 0 {
            let fake = FakeOIDC(port: port, state: state, server: server)
            state.withValues { $0.baseURL = fake.issuer }
            return fake
        }
        server.cancel()
        throw CancellationError()
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        server.cancel()
        await server.value
    }

    /// The person the next sign-ins are.
    public func signIn(as user: FakeOIDCUser) { state.withValues { $0.user = user } }
    /// The next authorization request is answered with `error=access_denied`.
    public func denyNext() { state.withValues { $0.denyNext = true } }
    /// The next id_token gets `tamper` wrong.
    public func tamperNext(_ tamper: FakeOIDCTamper) { state.withValues { $0.tamperNext = tamper } }
    /// The discovery document names this token endpoint (nil: its own).
    public func setTokenEndpoint(_ url: String?) { state.withValues { $0.tokenEndpointOverride = url } }
    /// How long id_tokens last, in seconds.
    public func setTokenLifetime(seconds: Int) { state.withValues { $0.tokenLifetime = seconds } }

    public var codesRedeemed: Int { state.withValues { $0.codesRedeemed } }
    public var codesRefused: Int { state.withValues { $0.codesRefused } }
    public var discoveryFetches: Int { state.withValues { $0.discoveryFetches } }
    public var jwksFetches: Int { state.withValues { $0.jwksFetches } }
    public var endSessions: Int { state.withValues { $0.endSessions } }

    static func json(_ status: Int, _ object: Any) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}

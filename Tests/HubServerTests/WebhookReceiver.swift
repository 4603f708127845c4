import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Mongo
import NIOCore
import Synchronization

/// A school's gateway in a test: an HTTP server on 127.0.0.1 and an ephemeral port that takes webhook deliveries at
/// `/hook`, checks each one's Standard Webhooks signature itself (its own HMAC, not the hub's code), and answers 503
/// while told to refuse.
final class WebhookReceiver: Sendable {
    /// One request as it arrived.
    struct Received: Sendable {
        /// `webhook-id`.
        var id: String
        /// `webhook-timestamp` (Unix seconds).
        var timestamp: Int64
        /// The parsed body.
        var body: BSONDocument
        /// Whether `webhook-signature` verified against the secret, and the timestamp was within five minutes.
        var valid: Bool
        /// The status answered.
        var status: Int
        var contentType: String?
    }

    private struct State {
        var secret: String?
        var refusing = false
        var received: [Received] = []
    }

    private let state = Mutex(State())
    private let server = Mutex<LocalHTTPServer?>(nil)

    /// The port it listens on.
    var port: Int { server.withLock { $0?.port ?? 0 } }

    /// `http://127.0.0.1:<port>/hook`.
    var url: String { "http://127.0.0.1:\(port)/hook" }

    /// The secret deliveries are checked with (the one POST /webhook answered).
    func expect(secret: String) { state.withLock { $0.secret = secret } }

    /// Answers 503 to every delivery while `refusing` (the gateway is down).
    func refuse(_ refusing: Bool) { state.withLock { $0.refusing = refusing } }

    /// Every request so far, in order.
    var received: [Received] { state.withLock { $0.received } }

    /// The requests answered 2xx.
    var accepted: [Received] { received.filter { $0.status == 200 } }

    /// Starts a receiver.
    static func start() async throws -> WebhookReceiver {
        let holder = Mutex<WebhookReceiver?>(nil)
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let receiver = holder.withLock { $0 }
            let status = receiver?.take(request.headers, body: Array(body.readableBytesView)) ?? 500
            return Response(status: .init(code: status))
        }
        let receiver = WebhookReceiver()
        holder.withLock { $0 = receiver }
        let server = try await LocalHTTPServer.start(router, name: "receiver")
        receiver.server.withLock { $0 = server }
        return receiver
    }

    /// Runs `body` with a new receiver, stopped afterwards.
    static func with(_ body: (WebhookReceiver) async throws -> Void) async throws {
        let receiver = try await start()
        do {
            try await body(receiver)
            await receiver.stop()
        } catch {
            await receiver.stop()
            throw error
        }
    }

    func stop() async {
        await server.withLock { $0 }?.stop()
    }

    /// Checks and records one delivery; the status to answer.
    private func take(_ headers: HTTPFields, body: [UInt8]) -> Int {
        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
        let id = header("webhook-id") ?? ""
        let timestamp = Int64(header("webhook-timestamp") ?? "") ?? 0
        let signatures = (header("webhook-signature") ?? "").split(separator: " ").map(String.init)
        return state.withLock { state in
            var valid = false
            if let secret = state.secret, secret.hasPrefix("whsec_"),
                let key = Data(base64Encoded: String(secret.dropFirst(6)))
            {
                let code = HMAC<SHA256>.authenticationCode(
                    for: Array("\(id).\(timestamp).".utf8) + body,
                    using: SymmetricKey(data: key))
                let expected = "v1," + Data(code).base64EncodedString()
                let fresh = abs(Int64(Date().timeIntervalSince1970) - timestamp) < 300
                valid = fresh && signatures.contains(expected)
            }
            let status = state.refusing ? 503 : 200
            let parsed = (try? JSONParser().document(from: body)) ?? [:]
            state.received.append(
                Received(
                    id: id, timestamp: timestamp, body: parsed, valid: valid, status: status,
                    contentType: header("content-type")))
            return status
        }
    }
}

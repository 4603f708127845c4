import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing

/// The network between a phone and the hub, made to fail on purpose: an HTTP gateway on 127.0.0.1 that forwards
/// every request to the real hub, except those `failing` picks, which it answers 502 Bad Gateway as a proxy whose
/// upstream dropped the connection would (or another status it is given). It records what it forwarded.
final class FlakyGateway: Sendable {
    /// The gateway's URL, to give the phone instead of the hub's.
    let url: URL
    private let failing: Mutex<@Sendable (HTTPRequest.Method, String) -> Bool>
    /// What the requests `failing` picks are answered: a status and a JSON body, if any.
    private let failure = Mutex<(status: HTTPResponse.Status, body: String?)>((.badGateway, nil))
    private let log = Mutex<[String]>([])

    private init(url: URL) {
        self.url = url
        failing = Mutex { _, _ in false }
    }

    /// From now on, answers `status` (502 unless told) with `body` as JSON to the requests (method, path) for which
    /// `predicate` holds.
    func fail(
        with status: HTTPResponse.Status = .badGateway, body: String? = nil,
        when predicate: @escaping @Sendable (HTTPRequest.Method, String) -> Bool
    ) {
        failure.withLock { $0 = (status, body) }
        failing.withLock { $0 = predicate }
    }

    /// "METHOD /path" of every request forwarded to the hub, in order.
    var forwarded: [String] { log.withLock { $0 } }

    /// Runs a gateway to `hub` for the time of `body`.
    static func with(to hub: URL, _ body: @Sendable (FlakyGateway) async throws -> Void) async throws {
        let session = URLSession(configuration: .ephemeral)
        let gatewayBox = Mutex<FlakyGateway?>(nil)
        let responder = CallbackResponder { (request: Request, _: BasicRequestContext) -> Response in
            guard let gateway = gatewayBox.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return try await gateway.forward(request, to: hub, session: session)
        }
        let app = Application(responder: responder, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let gateway = FlakyGateway(url: URL(string: "http://127.0.0.1:\(try #require(client.port))")!)
            gatewayBox.withLock { $0 = gateway }
            try await body(gateway)
        }
    }

    private func forward(_ request: Request, to hub: URL, session: URLSession) async throws -> Response {
        let path = request.uri.path
        if failing.withLock({ $0 })(request.method, path) {
            let (status, body) = failure.withLock { $0 }
            guard let body else { return Response(status: status) }
            return Response(
                status: status, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        log.withLock { $0.append("\(request.method) \(path)") }
        var upstream = URLRequest(url: URL(string: hub.absoluteString + request.uri.description)!)
        upstream.httpMethod = request.method.rawValue
        for field in request.headers
        where [.authorization, .contentType, .accept, .ifNoneMatch].contains(field.name)
            || field.name.rawName.lowercased() == "x-app-key"
        {
            upstream.setValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        let body = try await request.body.collect(upTo: 1 << 20)
        if body.readableBytes > 0 { upstream.httpBody = Data(body.readableBytesView) }
        let (data, response) = try await session.data(for: upstream)
        let http = try #require(response as? HTTPURLResponse)
        var headers = HTTPFields()
        for case (let name as String, let value as String) in http.allHeaderFields {
            // Hummingbird sets the length of the body it sends itself; URLSession has already decompressed it.
            guard let field = HTTPField.Name(name),
                ![.contentLength, .transferEncoding, .contentEncoding].contains(field)
            else { continue }
            headers[field] = value
        }
        return Response(
            status: .init(code: http.statusCode), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

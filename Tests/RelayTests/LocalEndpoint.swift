import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A webhook receiver for the tests that need an answer over HTTP (the webhook worker POSTs through libcurl): HTTP/1.1
/// on 127.0.0.1 and a port of its own, one connection at a time, each request answered `status` with no body and the
/// connection closed. Plain sockets: RelayTests brings no HTTP server.
final class LocalEndpoint: Sendable {
    /// One request as it arrived.
    struct Request: Sendable {
        /// The request line and headers.
        var head: String
        var body: [UInt8]

        /// The first header named `name` (any case).
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    struct NotStarted: Error {}

    /// The port it listens on.
    let port: Int
    private let listener: Int32
    private let status: Int
    private let requests = Mutex<[Request]>([])

    /// Every request so far, in order.
    var received: [Request] { requests.withLock { $0 } }

    /// Listens on 127.0.0.1 and a free port, answering `status` to every request.
    init(status: Int = 200) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw NotStarted() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw NotStarted()
        }
        self.listener = listener
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.status = status
        Thread { [self] in serve() }.start()
    }

    /// Stops listening (the accepting thread ends).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            if let request = read(connection) { requests.withLock { $0.append(request) } }
            let answer = Array("HTTP/1.1 \(status) Answer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(connection)
        }
    }

    /// Reads one request: its head, then as many bytes of body as its `Content-Length` says.
    private func read(_ connection: Int32) -> Request? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = bytes.firstRange(of: separator) {
                let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                var request = Request(head: head, body: [])
                let length = request.header("Content-Length").flatMap { Int($0) } ?? 0
                if bytes.count - end.upperBound >= length {
                    request.body = Array(bytes[end.upperBound..<end.upperBound + length])
                    return request
                }
            }
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            bytes += chunk[..<count]
        }
    }
}

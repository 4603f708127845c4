import DAO
import Foundation
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import NIOCore
import NIOPosix
import Testing

@Suite("GET /channel answered on the network thread")
struct CubeChannelHandlerTests {
    @Test func pathsItTakesAndPathsItLeavesToTheRouter() throws {
        let id = try #require(ObjectID(hex: "5f1e2d3c4b5a697887960514"))
        #expect(CubeChannelHandler.target("/channel") == .all)
        #expect(CubeChannelHandler.target("/channel?since=1") == .all)
        #expect(CubeChannelHandler.target("/channel/5f1e2d3c4b5a697887960514") == .channel(id))
        #expect(CubeChannelHandler.target("/channel/5f1e2d3c4b5a697887960514?x") == .channel(id))
        for other in [
            "/channels", "/channel/", "/channel/nothex", "/channel/5f1e2d3c4b5a697887960514/x", "/message", "/",
        ] {
            #expect(CubeChannelHandler.target(other) == nil, "\(other)")
        }
    }

    @Test func acceptEncodingIsReadAsAList() {
        for accepting in [
            "gzip", "GZIP", "deflate, gzip", " gzip ;q=0.8", "x-gzip", "br;q=1, gzip; q=0.5", "gzip;q=0, gzip",
        ] {
            #expect(CachedBody.acceptsGzip(accepting), "\(accepting)")
        }
        for refusing in [
            nil, "", "deflate", "br, identity", "gzip;q=0", "gzip; Q = 0.000", "gzipx", "x-gzip;q=0.0", "*",
        ] {
            #expect(!CachedBody.acceptsGzip(refusing), "\(refusing ?? "nil")")
        }
    }

    @Test func theDateIsRFC9110sFixedForm() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.format(1_795_478_430) == "Tue, 24 Nov 2026 00:00:30 GMT")
        // Every day of four years against Foundation's own formatting.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        for second in stride(from: Int64(1_700_000_000), to: 1_700_000_000 + 4 * 366 * 86_400, by: 86_400 + 3_601) {
            #expect(
                HTTPDate.format(second) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(second))))
        }
    }

    @Test func answersCarryTheHeadersEveryResponseHas() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let get = try await hub.client.execute(
                uri: "/channel?cachebuster=1", method: .get,
                headers: [RequestIDMiddleware<HubRequestContext>.header: "phone-42"])
            #expect(get.status == .ok)
            #expect(get.headers[RequestIDMiddleware<HubRequestContext>.header] == "phone-42")
            #expect(get.headers[.server] == "msi-hub")
            #expect(get.headers[.contentLength] == String(get.body.readableBytes))
            #expect(get.headers[.contentType] == "application/json; charset=utf-8")
            #expect(get.headers[.xContentTypeOptions] == "nosniff")
            let second = Int64(Date().timeIntervalSince1970)
            #expect([HTTPDate.format(second - 1), HTTPDate.format(second)].contains(get.headers[.date] ?? ""))

            // An id the hub will not echo (spaces) is replaced by its own.
            let own = try await hub.client.execute(
                uri: "/channel", method: .get,
                headers: [RequestIDMiddleware<HubRequestContext>.header: "not an id"])
            let ownID = try #require(own.headers[RequestIDMiddleware<HubRequestContext>.header])
            #expect(ownID != "not an id" && !ownID.isEmpty)

            let head = try await hub.client.execute(uri: "/channel", method: .head)
            #expect(head.status == .ok)
            #expect(head.body.readableBytes == 0)
            #expect(head.headers[.eTag] == get.headers[.eTag])
            #expect(head.headers[.contentLength] == get.headers[.contentLength])

            let channel = try await hub.client.execute(uri: "/channel/\(Legacy.channelID.hex)", method: .head)
            #expect(channel.status == .ok)
            #expect(channel.body.readableBytes == 0)
            // A channel the cube does not hold goes to the router, which asks the database.
            let missing = try await hub.client.execute(uri: "/channel/\(ObjectID().hex)", method: .get)
            #expect(missing.status == .notFound)
            #expect(missing.headers[RequestIDMiddleware<HubRequestContext>.header] != nil)
        }
    }

    @Test(.timeLimit(.minutes(1))) func pipelinedAnswersKeepTheirOrder() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let port = try #require(hub.client.port)
            // The first request goes to the application (a database read); the second is one the
            // handler could answer at once, and must not overtake the first.
            let requests = """
                GET /message?limit=1 HTTP/1.1\r\nHost: hub\r\nX-Request-ID: first\r\n\r\n\
                GET /channel HTTP/1.1\r\nHost: hub\r\nX-Request-ID: second\r\n\r\n\
                GET /channel HTTP/1.1\r\nHost: hub\r\nX-Request-ID: third\r\nConnection: close\r\n\r\n
                """
            let answer = try await RawHTTP.exchange(port: port, sending: requests)
            let ids = answer.components(separatedBy: "\r\n").compactMap { line -> String? in
                let lower = line.lowercased()
                return lower.hasPrefix("x-request-id: ") ? String(line.dropFirst("x-request-id: ".count)) : nil
            }
            #expect(ids == ["first", "second", "third"])
            #expect(answer.components(separatedBy: "HTTP/1.1 200 OK").count - 1 == 3)
            // `Connection: close` was honoured: the exchange ended because the hub closed the connection.
            #expect(answer.hasSuffix("]"))
        }
    }
}

/// One raw HTTP/1.1 exchange over a TCP connection: writes bytes as given (then, with `halfClose`, closes its
/// sending side, as a client that gives up on a body does), reads until the server closes.
enum RawHTTP {
    static func exchange(port: Int, sending text: String, halfClose: Bool = false) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: text))
            if halfClose { outbound.finish() }
            var received = ByteBuffer()
            for try await var chunk in inbound { received.writeBuffer(&chunk) }
            return String(buffer: received)
        }
    }
}

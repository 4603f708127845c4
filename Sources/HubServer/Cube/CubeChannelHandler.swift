import DAO
import Dispatch
import HTTPTypes
import HubCore
import Hummingbird
import Logging
import Metrics
import Mongo
import NIOCore
import NIOHTTP1

/// Answers GET and HEAD of `/channel` and `/channel/:id` on the connection's network thread, from
/// the in-memory cube, the way a static file server does: no hop to a Swift task, no conversion to
/// HTTP types, no router, no middleware chain.
///
/// Every phone fetches GET /channel when it starts, so this is the hub's hottest route. The handler
/// sits in each connection's pipeline right after the HTTP/1 decoder (`HubHTTP1Channel`). A request
/// it does not take goes on to the application unchanged, and the router serves the same routes with
/// the same answer (`CachedBody.answer`): another route; a cube that is not loaded or not confirmed
/// current (the router then loads it, or serves it with its age); a channel not in memory; a request that asks
/// to close the connection (the application closes it); a connection whose peer is not reading; and
/// any request that arrives while the application still owes an answer on this connection, so
/// pipelined answers keep their order; and any request with an `Authorization` header (an admin sees the access
/// lists: the router authenticates the caller and picks the answer). What it answers is the cube as everyone but
/// admins reads it (`CubeVisibility`: every `access` list empty), prepared like the admins' one.
///
/// What the middleware gives every request it gives here too: `X-Request-ID`, the `Server` header,
/// `X-Content-Type-Options: nosniff`, a debug log line with `request_id`, and the request counter and
/// latency of `GET /metrics`.
final class CubeChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What every connection's handler shares.
    struct Shared: Sendable {
        let cube: CubeCache
        let answers: CubeAnswers
        let serverName: String
        let logger: Logger
        let metrics = AnswerMetrics()
    }

    private let shared: Shared
    /// The request being read: answered here, passed on, or none between requests.
    private var reading = Reading.idle
    /// Requests passed on whose answer the application has not finished writing.
    private var owed = 0

    private enum Reading {
        case idle
        case passing
        case answering(PendingAnswer)
    }

    private struct PendingAnswer {
        let head: HTTPResponseHead
        let body: ByteBuffer?
        let recorders: AnswerMetrics.Recorders
        let started: UInt64
    }

    init(_ shared: Shared) {
        self.shared = shared
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if owed == 0, context.channel.isWritable, let pending = answer(request) {
                reading = .answering(pending)
            } else {
                reading = .passing
                owed += 1
                context.fireChannelRead(data)
            }
        case .body:
            // A GET's body means nothing; one the application takes is passed on.
            if case .answering = reading { return }
            context.fireChannelRead(data)
        case .end:
            if case .answering(let pending) = reading {
                write(pending, context: context)
            } else {
                context.fireChannelRead(data)
            }
            reading = .idle
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), owed > 0 { owed -= 1 }
        context.write(data, promise: promise)
    }

    /// The answer to `request` from memory, or nil to pass it on.
    private func answer(_ request: HTTPRequestHead) -> PendingAnswer? {
        let isHead = request.method == .HEAD
        guard request.method == .GET || isHead, request.isKeepAlive,
            !request.headers.contains(name: "Authorization"),
            let target = Self.target(request.uri),
            shared.cube.freshness.isCurrent, let snapshot = shared.cube.latest(),
            let bodies = shared.answers.bodies(for: snapshot)
        else { return nil }
        let cached: CachedBody?
        switch target {
        case .all: cached = bodies.redactedAll
        case .channel(let id): cached = bodies.redactedChannels[id]
        }
        guard let cached else { return nil }
        let answer = cached.answer(
            acceptEncoding: Self.field("Accept-Encoding", of: request.headers),
            ifNoneMatch: Self.field("If-None-Match", of: request.headers))
        let id =
            request.headers.first(name: RequestIDMiddleware<HubRequestContext>.header.canonicalName)
            .flatMap(RequestIDMiddleware<HubRequestContext>.accepted) ?? RequestID().description
        var headers = answer.headers
        headers.add(name: "Server", value: shared.serverName)
        headers.add(name: "Date", value: HTTPDate.now)
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: RequestIDMiddleware<HubRequestContext>.header.canonicalName, value: id)
        if shared.logger.logLevel <= .debug {
            var logger = shared.logger
            logger[metadataKey: "request_id"] = .string(id)
            logger.debug(
                "Request",
                metadata: [
                    "hb.request.path": .string(request.uri),
                    "hb.request.method": .string(request.method.rawValue),
                ])
        }
        let status: HTTPResponseStatus = answer.status == .ok ? .ok : .notModified
        return PendingAnswer(
            head: HTTPResponseHead(version: request.version, status: status, headers: headers),
            body: isHead ? nil : answer.body,
            recorders: shared.metrics.recorders(target: target, head: isHead, status: answer.status),
            started: DispatchTime.now().uptimeNanoseconds)
    }

    private func write(_ pending: PendingAnswer, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(pending.head)), promise: nil)
        if let body = pending.body {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        pending.recorders.record(nanoseconds: DispatchTime.now().uptimeNanoseconds - pending.started)
    }

    /// A header's value, several lines of it joined as one list.
    private static func field(_ name: String, of headers: HTTPHeaders) -> String? {
        let values = headers[name]
        return values.count <= 1 ? values.first : values.joined(separator: ", ")
    }

    /// Which cached body a path names.
    enum Target: Equatable {
        case all
        case channel(ObjectID)

        /// The route label the router gives the same request.
        var route: String {
            switch self {
            case .all: "/channel"
            case .channel: "/channel/{channelID}"
            }
        }
    }

    /// The target of a request path (its query ignored, as the router ignores it), or nil for any other path.
    static func target(_ uri: String) -> Target? {
        let path = uri.utf8.firstIndex(of: UInt8(ascii: "?")).map { uri[..<$0] } ?? uri[...]
        if path == "/channel" { return .all }
        guard path.hasPrefix("/channel/") else { return nil }
        return ObjectID(hex: path.dropFirst("/channel/".count)).map(Target.channel)
    }
}

/// The request counters and latency timers of the answers `CubeChannelHandler` gives, named as
/// Hummingbird's `MetricsMiddleware` names them, so `GET /metrics` counts requests the same whichever
/// way they went. Made once: the routes, methods and statuses the handler answers are few and fixed.
final class AnswerMetrics: Sendable {
    struct Recorders: Sendable {
        let requests: Counter
        let duration: Metrics.Timer

        func record(nanoseconds: UInt64) {
            requests.increment()
            duration.recordNanoseconds(Int64(clamping: nanoseconds))
        }
    }

    /// Indexed by `Self.index(target:head:notModified:)`.
    private let all: [Recorders]

    init() {
        var all: [Recorders] = []
        for route in [CubeChannelHandler.Target.all.route, "/channel/{channelID}"] {
            for method in [HTTPRequest.Method.get, .head] {
                for status in [HTTPResponse.Status.ok, .notModified] {
                    let dimensions = [
                        ("http.route", route), ("http.request.method", method.rawValue),
                        ("http.response.status_code", String(status.code)),
                    ]
                    all.append(
                        Recorders(
                            requests: Counter(label: "hb.requests", dimensions: dimensions),
                            duration: Metrics.Timer(
                                label: "http.server.request.duration",
                                dimensions: dimensions, preferredDisplayUnit: .seconds)))
                }
            }
        }
        self.all = all
    }

    func recorders(target: CubeChannelHandler.Target, head: Bool, status: HTTPResponse.Status) -> Recorders {
        let route = target == .all ? 0 : 4
        return all[route + (head ? 2 : 0) + (status == .ok ? 0 : 1)]
    }
}

import DAO
import Dispatch
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Mongo
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Answers GET and HEAD of `/channel` and `/channel/:id` on the connection's network thread, from
/// the in-memory cube, the way a static file server does: no hop to a Swift task, no router, no
/// middleware chain.
///
/// Every phone fetches GET /channel when it starts, so this is the hub's hottest route. The handler
/// sits in each connection's pipeline in front of the application. A request it does not take goes
/// on to the application unchanged, and the router serves the same routes with the same answer
/// (`CachedBody.answer`): another route; a cube that is not loaded or not confirmed current (the
/// router then loads it or answers 503); a channel not in memory; `Connection: close`; a connection
/// whose peer is not reading; and any request that arrives while the application still owes an
/// answer on this connection, so pipelined answers keep their order.
///
/// What the middleware gives every request it gives here too: `X-Request-ID`, the `Server` header,
/// a debug log line with `request_id`, and the request counter and latency of `GET /metrics`.
final class CubeChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// What every connection's handler shares.
    struct Shared: Sendable {
        let cube: CubeCache
        let serverName: String
        let logger: Logger
        let metrics = RouteMetrics()
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
        let answer: CachedBody.Answer
        let route: String
        let method: HTTPRequest.Method
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
            if case .passing = reading { context.fireChannelRead(data) }
        case .end:
            switch reading {
            case .passing: context.fireChannelRead(data)
            case .answering(let pending): write(pending, context: context)
            case .idle: context.fireChannelRead(data)
            }
            reading = .idle
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), owed > 0 { owed -= 1 }
        context.write(data, promise: promise)
    }

    /// The answer to `request` from memory, or nil to pass it on.
    private func answer(_ request: HTTPRequest) -> PendingAnswer? {
        guard request.method == .get || request.method == .head,
              let target = request.path.flatMap(Self.target),
              !Self.asksToClose(request.headerFields),
              let snapshot = shared.cube.servableSnapshot() else { return nil }
        let body: CachedBody?
        switch target {
        case .all: body = snapshot.all
        case .channel(let id): body = snapshot.channels[id]
        }
        guard let body else { return nil }
        var answer = body.answer(head: request.method == .head, headers: request.headerFields)
        let id = request.headerFields[RequestIDMiddleware<HubRequestContext>.header]
            .flatMap(RequestIDMiddleware<HubRequestContext>.accepted) ?? RequestID().description
        answer.headers[RequestIDMiddleware<HubRequestContext>.header] = id
        answer.headers[.server] = shared.serverName
        if shared.logger.logLevel <= .debug {
            var logger = shared.logger
            logger[metadataKey: "request_id"] = .string(id)
            logger.debug("Request", metadata: ["hb.request.path": .string(request.path ?? ""),
                                               "hb.request.method": .string(request.method.rawValue)])
        }
        return PendingAnswer(answer: answer, route: target.route, method: request.method,
                             started: DispatchTime.now().uptimeNanoseconds)
    }

    private func write(_ pending: PendingAnswer, context: ChannelHandlerContext) {
        let head = HTTPResponse(status: pending.answer.status, headerFields: pending.answer.headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body = pending.answer.body {
            context.write(wrapOutboundOut(.body(body)), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        shared.metrics.record(route: pending.route, method: pending.method, status: pending.answer.status,
                              nanoseconds: DispatchTime.now().uptimeNanoseconds - pending.started)
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
    static func target(_ path: String) -> Target? {
        let route = path.utf8.firstIndex(of: UInt8(ascii: "?")).map { path[..<$0] } ?? path[...]
        if route == "/channel" { return .all }
        guard route.hasPrefix("/channel/") else { return nil }
        return ObjectID(hex: route.dropFirst("/channel/".count)).map(Target.channel)
    }

    /// Whether the client asks to close the connection after this answer (left to the application,
    /// which closes it).
    static func asksToClose(_ headers: HTTPFields) -> Bool {
        headers[values: .connection].contains { value in
            value.split(separator: ",").contains { $0.trimmingSpaces.lowercased() == "close" }
        }
    }
}

/// The request counter and latency timer of one route, method and status, named as Hummingbird's
/// `MetricsMiddleware` names them, so `GET /metrics` counts requests the same whichever way they went.
final class RouteMetrics: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    private struct Recorders {
        let requests: Counter
        let duration: Metrics.Timer
    }

    private let recorders = Mutex<[Key: Recorders]>([:])

    func record(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status, nanoseconds: UInt64) {
        let key = Key(route: route, method: method, status: status)
        let recorder = recorders.withLock { recorders in
            if let existing = recorders[key] { return existing }
            let dimensions = [("http.route", route), ("http.request.method", method.rawValue),
                              ("http.response.status_code", String(status.code))]
            let made = Recorders(requests: Counter(label: "hb.requests", dimensions: dimensions),
                                 duration: Metrics.Timer(label: "http.server.request.duration", dimensions: dimensions,
                                                         preferredDisplayUnit: .seconds))
            recorders[key] = made
            return made
        }
        recorder.requests.increment()
        recorder.duration.recordNanoseconds(Int64(clamping: nanoseconds))
    }
}

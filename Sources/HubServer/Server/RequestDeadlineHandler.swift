import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// Closes a connection that holds the hub without using it: kept alive with no request under way for longer than
/// `HTTP_IDLE_TIMEOUT_SECONDS`, or sending a request so slowly that its head has not arrived
/// `HTTP_HEADER_TIMEOUT_SECONDS` after its first byte, or its head and body `HTTP_REQUEST_TIMEOUT_SECONDS` after it
/// (a slowloris client sending a byte a minute). While the hub owes an answer and reads nothing, no deadline runs:
/// the application keeps its own.
///
/// It sits right after the HTTP/1 decoder, before `CubeChannelHandler`, so it sees every request, those answered
/// on the network thread too; its `probe` sits before the decoder and tells it when a request's first bytes
/// arrive, before the decoder has made a head of them. The deadlines cost no timer per request: one timer per
/// connection wakes at the next deadline or at `Shared.checkInterval` (whichever comes first) and compares the
/// state's times with the clock, so a connection is closed at most that interval after its deadline, never before.
/// The timer runs on the connection's event loop and is cancelled when it closes.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What every connection's handler shares: the deadlines, and the counters of the connections they closed.
    struct Shared: Sendable {
        let idleTimeout: TimeAmount
        let headerTimeout: TimeAmount
        let requestTimeout: TimeAmount
        /// The longest a connection's timer sleeps: half the shortest deadline.
        let checkInterval: TimeAmount
        let logger: Logger
        fileprivate let closed: [Reason: Counter]

        init(_ configuration: ConnectionConfiguration, logger: Logger) {
            idleTimeout = TimeAmount(configuration.idleTimeout)
            headerTimeout = TimeAmount(configuration.headerTimeout)
            requestTimeout = TimeAmount(configuration.requestTimeout)
            checkInterval = max(
                .milliseconds(10), .nanoseconds(min(idleTimeout, headerTimeout, requestTimeout).nanoseconds / 2))
            self.logger = logger
            closed = Dictionary(
                uniqueKeysWithValues: Reason.allCases.map {
                    (
                        $0,
                        Counter(label: "msi_http_connections_timed_out_total", dimensions: [("deadline", $0.rawValue)])
                    )
                })
        }
    }

    /// Which deadline closed a connection.
    fileprivate enum Reason: String, CaseIterable {
        case idle, header, request
    }

    private let shared: Shared
    /// When the first byte of the request being read arrived; nil between requests.
    private var readingSince: NIODeadline?
    /// Whether the head of the request being read has arrived.
    private var headRead = false
    /// Requests whose head arrived and whose answer has not been written to its end.
    private var owed = 0
    /// When the connection last had nothing to read and nothing to answer.
    private var idleSince = NIODeadline.now()
    private var timer: Scheduled<Void>?

    init(_ shared: Shared) {
        self.shared = shared
    }

    /// The handler to place before the HTTP decoder: it reports each read's bytes to this one.
    var probe: Probe { Probe(self) }

    /// Reports the bytes a connection reads before the HTTP decoder takes them, so a request's deadlines count
    /// from its first byte (a head that never ends is never decoded).
    final class Probe: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer

        private let deadlines: RequestDeadlineHandler

        fileprivate init(_ deadlines: RequestDeadlineHandler) {
            self.deadlines = deadlines
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            deadlines.bytesArrived()
            context.fireChannelRead(data)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            // The head's bytes came in the read that ended the request before it.
            if readingSince == nil { readingSince = .now() }
            headRead = true
            owed += 1
        case .body:
            break
        case .end:
            readingSince = nil
            headRead = false
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            // An answer to a request the decoder could not read has no head here: never below zero.
            owed = max(0, owed - 1)
            if owed == 0, readingSince == nil { idleSince = .now() }
        }
        context.write(data, promise: promise)
    }

    fileprivate func bytesArrived() {
        if readingSince == nil { readingSince = .now() }
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        idleSince = .now()
        schedule(context: context, now: idleSince)
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }

    private func schedule(context: ChannelHandlerContext, now: NIODeadline) {
        let wake = min(deadline().map { $0.at } ?? .distantFuture, now + shared.checkInterval)
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: wake) { [self] in
            check(context: context)
        }
    }

    private func check(context: ChannelHandlerContext) {
        timer = nil
        let now = NIODeadline.now()
        guard let (reason, at) = deadline(), now >= at else {
            schedule(context: context, now: now)
            return
        }
        shared.closed[reason]?.increment()
        shared.logger.debug(
            "closing a connection past its deadline",
            metadata: [
                "deadline": "\(reason.rawValue)",
                "peer": "\(context.channel.remoteAddress?.description ?? "-")",
            ])
        context.close(promise: nil)
    }

    /// The deadline the connection's state is under, if any.
    private func deadline() -> (reason: Reason, at: NIODeadline)? {
        if let readingSince {
            let request = readingSince + shared.requestTimeout
            let header = readingSince + shared.headerTimeout
            return !headRead && header < request ? (.header, header) : (.request, request)
        }
        return owed == 0 ? (.idle, idleSince + shared.idleTimeout) : nil
    }
}

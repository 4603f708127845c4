import Dispatch
import Logging
import Metrics
import NIOCore
import Synchronization

/// Keeps the hub's open connections at most `HTTP_MAX_CONNECTIONS`: a connection past the cap is answered 503
/// (`too_many_connections`, `Retry-After: 1`) and closed at once, before it is read, so a flood of connections
/// runs into the cap rather than into the process's file descriptors, and the connections already open are
/// served as before. A refused connection is not counted.
///
/// The first handler of every connection's pipeline (`HubHTTP1Channel`). It admits the connection when added,
/// and gives its place back when removed, which NIO does for every handler when the connection closes.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The count every connection's handler shares, across event loops.
    final class Shared: Sendable {
        /// `HTTP_MAX_CONNECTIONS`.
        let maximum: Int
        private let open = Atomic<Int>(0)
        /// When the last refusal was logged (uptime nanoseconds), so a flood logs a line a minute, not a line a connection.
        private let lastWarning = Atomic<UInt64>(0)
        private let refusals = Counter(label: "msi_http_connections_refused_total")
        private let logger: Logger

        init(maximum: Int, logger: Logger) {
            self.maximum = maximum
            self.logger = logger
        }

        /// The connections open now.
        var count: Int { open.load(ordering: .relaxed) }

        /// Takes a place for a new connection, or says there is none.
        func admit() -> Bool {
            guard open.wrappingAdd(1, ordering: .relaxed).newValue > maximum else { return true }
            open.wrappingSubtract(1, ordering: .relaxed)
            refusals.increment()
            let now = DispatchTime.now().uptimeNanoseconds
            let last = lastWarning.load(ordering: .relaxed)
            if last == 0 || now - last >= 60_000_000_000,
                lastWarning.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
            {
                logger.warning(
                    "HTTP_MAX_CONNECTIONS reached: new connections are answered 503 and closed",
                    metadata: ["max_connections": "\(maximum)"])
            }
            return false
        }

        /// Gives back the place of a connection that closed.
        func release() {
            open.wrappingSubtract(1, ordering: .relaxed)
        }
    }

    private let shared: Shared
    private var state = State.new

    private enum State {
        case new, admitted, refused, released
    }

    init(_ shared: Shared) {
        self.shared = shared
    }

    func handlerAdded(context: ChannelHandlerContext) {
        state = shared.admit() ? .admitted : .refused
        if state == .refused, context.channel.isActive { refuse(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if state == .admitted { shared.release() }
        state = .released
    }

    func channelActive(context: ChannelHandlerContext) {
        if state == .refused { refuse(context: context) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection's bytes reach nothing: it is being closed.
        guard state != .refused else { return }
        context.fireChannelRead(data)
    }

    private func refuse(context: ChannelHandlerContext) {
        let answer = context.channel.allocator.buffer(bytes: Self.refusal)
        context.writeAndFlush(wrapOutboundOut(answer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// The whole answer to a connection past the cap, written before any request is read.
    private static let refusal: [UInt8] = {
        let body =
            #"{"error":{"code":""# + HubError.Code.tooManyConnections.description
            + #"","message":"The hub has as many connections open as it "#
            + #"serves; try again in a moment."}}"#
        return Array(
            ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body).utf8)
    }()
}

import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore

/// The fake's connections: HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on one port. A connection that opens
/// with HTTP/2's 24-byte preface gets Hummingbird's HTTP/2 pipeline, any other its HTTP/1.1 pipeline; each
/// connection is counted while it is open.
struct FakeFCMChannel: HTTPChannelHandler {
    /// The pipeline a connection got, once its first bytes said which.
    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        case http2(HTTP2Channel.Value)
    }

    /// A connection and the pipeline it will get.
    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    private let http1: HTTP1Channel
    private let http2: HTTP2Channel
    private let state: FakeFCMState

    /// The header field the fake adds to each request that came over HTTP/2, for the routes to count them.
    static let http2Field = HTTPFields.Element.Name("x-fake-fcm-http2")!

    /// A channel answering with `responder`, counting connections in `state`.
    init(responder: @escaping HTTPChannelHandler.Responder, state: FakeFCMState) {
        self.http1 = HTTP1Channel(responder: responder)
        self.http2 = HTTP2Channel { request, writer, channel in
            var head = request.head
            head.headerFields[Self.http2Field] = "1"
            try await responder(Request(head: head, body: request.body), writer, channel)
        }
        self.state = state
    }

    var responder: Responder { http1.responder }

    /// The server the fake's `Application` runs: this channel for every connection.
    static func server(state: FakeFCMState) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in FakeFCMChannel(responder: responder, state: state) }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        state.connectionOpened()
        channel.closeFuture.whenComplete { [state] _ in state.connectionClosed() }
        let negotiated = channel.eventLoop.makePromise(of: Negotiated.self)
        let sniffer = PrefaceSniffer { isHTTP2 in
            let setup: EventLoopFuture<Negotiated> =
                isHTTP2
                ? http2.setup(channel: channel, logger: logger).map { .http2($0) }
                : http1.setup(channel: channel, logger: logger).map { .http1($0) }
            setup.cascade(to: negotiated)
            return setup.map { _ in }
        } failed: { error in
            negotiated.fail(error)
        }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(sniffer)
            return Value(negotiated: negotiated.futureResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let negotiated = try? await value.negotiated.get() else { return }
        switch negotiated {
        case .http1(let connection): await http1.handle(value: connection, logger: logger)
        case .http2(let connection): await http2.handle(value: connection, logger: logger)
        }
    }
}

/// Holds a connection's first bytes until they show whether it speaks HTTP/2 with prior knowledge (they begin
/// with the preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`) or HTTP/1.1 (they differ from it), has the pipeline set up
/// behind it, hands it the bytes and leaves.
private final class PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let configure: (_ isHTTP2: Bool) -> EventLoopFuture<Void>
    private let failed: (any Error) -> Void
    private var buffered: ByteBuffer?
    private var decided = false

    init(configure: @escaping (_ isHTTP2: Bool) -> EventLoopFuture<Void>, failed: @escaping (any Error) -> Void) {
        self.configure = configure
        self.failed = failed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if var buffered {
            buffered.writeBuffer(&bytes)
            self.buffered = buffered
        } else {
            buffered = bytes
        }
        guard !decided, let buffered else { return }
        let seen = Array(buffered.readableBytesView.prefix(Self.preface.count))
        let isHTTP2 = seen == Self.preface
        // Still a prefix of the preface, and too short to tell: wait for more.
        guard isHTTP2 || seen != Array(Self.preface.prefix(seen.count)) else { return }
        decided = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        configure(isHTTP2).whenComplete { result in
            let (sniffer, context) = loopBound.value
            switch result {
            case .success:
                if let bytes = sniffer.buffered {
                    sniffer.buffered = nil
                    context.fireChannelRead(sniffer.wrapInboundOut(bytes))
                    context.fireChannelReadComplete()
                }
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            case .failure(let error):
                sniffer.failed(error)
                context.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !decided {
            decided = true
            failed(ChannelError.eof)
        }
        context.fireChannelInactive()
    }
}

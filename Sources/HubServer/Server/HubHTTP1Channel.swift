import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// Hummingbird's HTTP/1.1 connection pipeline with the hub's `CubeChannelHandler` placed where it
/// reads requests as the HTTP/1 decoder made them, before their conversion to HTTP types, so the
/// hottest route skips that conversion as well; in front of it the connection cap
/// (`ConnectionLimitHandler`) and the deadlines (`RequestDeadlineHandler`, with its probe before the
/// decoder). Otherwise the same pipeline as Hummingbird's `HTTP1Channel`, and the same request handling.
struct HubHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    let responder: HTTPChannelHandler.Responder
    let cube: CubeChannelHandler.Shared
    let limit: ConnectionLimitHandler.Shared
    let deadlines: RequestDeadlineHandler.Shared

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = 80 * 1024
            limits.maxHeaderListSize = 80 * 1024
            limits.maxHeaderFieldCount = 1000
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ConnectionLimitHandler(limit))
            let deadlines = RequestDeadlineHandler(self.deadlines)
            try pipeline.addHandler(deadlines.probe)
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false,  // the application answers a connection's requests in order
                withErrorHandling: false,  // the application answers errors
                withOutboundHeaderValidation: false,  // HTTP types validate headers already
                withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: limits
            )
            try pipeline.addHandler(deadlines)
            try pipeline.addHandler(CubeChannelHandler(cube))
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            // Its idle timeout would see only the requests CubeChannelHandler passes on; RequestDeadlineHandler
            // keeps the deadlines. It still closes connections gracefully on shutdown.
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
            return try NIOAsyncChannel(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with GET /channel answered on the network thread, a cap on connections and deadlines on them
    /// (`HubHTTP1Channel`).
    static func hubHTTP1(
        cube: CubeChannelHandler.Shared, limit: ConnectionLimitHandler.Shared,
        deadlines: RequestDeadlineHandler.Shared
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            HubHTTP1Channel(responder: responder, cube: cube, limit: limit, deadlines: deadlines)
        }
    }
}

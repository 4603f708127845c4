import Hummingbird
import Logging

/// A server a test stands up beside the hub, on 127.0.0.1 and an ephemeral port (a school's webhook gateway, an
/// identity provider's key endpoint): `router` answers until `stop()`.
struct LocalHTTPServer: Sendable {
    struct NotStarted: Error {}

    let port: Int
    private let task: Task<Void, Never>

    /// Starts serving `router`; returns once the server listens.
    /// - Throws: `NotStarted` when it never did.
    static func start(_ router: Router<BasicRequestContext>, name: String) async throws -> LocalHTTPServer {
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: name),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let task = Task {
            try? await app.runService(gracefulShutdownSignals: [])
            continuation.finish()
        }
        for await port in ports where port > 0 {
            return LocalHTTPServer(port: port, task: task)
        }
        task.cancel()
        throw NotStarted()
    }

    /// Stops the server and waits until it has.
    func stop() async {
        task.cancel()
        await task.value
    }
}

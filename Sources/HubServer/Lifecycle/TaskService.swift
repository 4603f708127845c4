import ServiceLifecycle

/// A background task that runs for the application's life and is cancelled at graceful shutdown.
struct TaskService: Service {
    let name: String
    let body: @Sendable () async -> Void

    init(name: String, _ body: @escaping @Sendable () async -> Void) {
        self.name = name
        self.body = body
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await body() }
    }
}

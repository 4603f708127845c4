/// How long a client may hold a connection without using it, and how many connections the hub keeps open: a
/// client that sends nothing, or a request a byte at a time, is closed, and a flood of connections cannot take
/// every file descriptor, so everyone else is still served.
public struct ConnectionConfiguration: Sendable {
    /// A kept-alive connection with no request under way is closed after this (`HTTP_IDLE_TIMEOUT_SECONDS`).
    public var idleTimeout: Duration
    /// A request's head must have arrived this long after its first byte (`HTTP_HEADER_TIMEOUT_SECONDS`).
    public var headerTimeout: Duration
    /// A request's head and body must have arrived this long after its first byte (`HTTP_REQUEST_TIMEOUT_SECONDS`).
    public var requestTimeout: Duration
    /// Connections open at once (`HTTP_MAX_CONNECTIONS`); past it a new one is answered 503 and closed.
    public var maxConnections: Int

    public init(
        idleTimeout: Duration = .seconds(60), headerTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30), maxConnections: Int = 4096
    ) {
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
    }

    /// The connection settings the environment gives.
    /// - Throws: `ConfigurationError` naming a variable whose value cannot be used.
    static func fromEnvironment(_ environment: [String: String]) throws -> ConnectionConfiguration {
        var connections = ConnectionConfiguration()
        if let value = try environment.number("HTTP_IDLE_TIMEOUT_SECONDS", in: 1...3600) {
            connections.idleTimeout = .seconds(value)
        }
        if let value = try environment.number("HTTP_HEADER_TIMEOUT_SECONDS", in: 1...600) {
            connections.headerTimeout = .seconds(value)
        }
        if let value = try environment.number("HTTP_REQUEST_TIMEOUT_SECONDS", in: 1...3600) {
            connections.requestTimeout = .seconds(value)
        }
        if let value = try environment.number("HTTP_MAX_CONNECTIONS", in: 1...1_000_000) {
            connections.maxConnections = value
        }
        return connections
    }
}

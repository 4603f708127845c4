/// How to reach the database and how patient to be with it.
public struct MongoConfiguration: Sendable {
    /// The connection string; its path names the database (default `msi`).
    public var uri: String
    /// The name the server logs for our connections.
    public var appName: String
    /// How long an operation waits for a usable server before failing (and the hub answers 503).
    public var serverSelectionTimeoutMS: Int32
    /// How long to wait for a TCP connection.
    public var connectTimeoutMS: Int32
    /// How long a socket read or write may block.
    public var socketTimeoutMS: Int32
    /// How many connections (and threads running blocking calls) the pool keeps at most.
    public var maxPoolSize: Int

    /// The database when the URI names none.
    public static let defaultDatabaseName = "msi"

    public init(
        uri: String,
        appName: String = "msi-hub",
        serverSelectionTimeoutMS: Int32 = 2_000,
        connectTimeoutMS: Int32 = 2_000,
        socketTimeoutMS: Int32 = 10_000,
        maxPoolSize: Int = 8
    ) {
        self.uri = uri
        self.appName = appName
        self.serverSelectionTimeoutMS = serverSelectionTimeoutMS
        self.connectTimeoutMS = connectTimeoutMS
        self.socketTimeoutMS = socketTimeoutMS
        self.maxPoolSize = maxPoolSize
    }
}

import CMongo
import NIOConcurrencyHelpers
import NIOPosix

/// A pool of libmongoc clients and the threads that run their blocking calls.
///
/// libmongoc blocks, so no call of it may run on an event loop or in Swift's cooperative pool:
/// every operation leases a client on one of this pool's own threads (`withClient`). There are as
/// many threads as clients, so a thread never waits in `mongoc_client_pool_pop` for a client that
/// another waiting thread would have to give back.
public final class MongoClientPool: @unchecked Sendable {
    // @unchecked: `pool` and `uri` are libmongoc objects that are thread-safe by their contract
    // (mongoc_client_pool_t), set once in init and destroyed once, after the last lease: by `close()` once its
    // threads have stopped, or in deinit for a pool never closed; everything mutable is behind `state`.

    /// The database that the URI names, or `msi`.
    public let defaultDatabaseName: String
    /// The settings this pool was made with.
    public let configuration: MongoConfiguration

    private let pool: OpaquePointer
    private let uri: OpaquePointer
    private let threads: NIOThreadPool
    private let state = NIOLockedValueBox(State())

    private struct State {
        var lifecycle = Lifecycle.open
        var inUse = 0
        var waiting = 0
    }

    /// `closed`: the threads have stopped and the libmongoc pool, with its connections, is destroyed.
    private enum Lifecycle { case open, closing, closed }

    /// Opens a pool for `configuration`; connections are made lazily, on first use.
    /// - Throws: `invalidURI` when libmongoc cannot parse the connection string.
    public init(configuration: MongoConfiguration) throws {
        _ = MongoLibrary.initialized
        var error = bson_error_t()
        guard let uri = mongoc_uri_new_with_error(configuration.uri, &error) else {
            throw MongoError(.invalidURI, "MONGODB_URI is not a valid connection string: \(MongoError(error).message)")
        }
        mongoc_uri_set_appname(uri, configuration.appName)
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, configuration.serverSelectionTimeoutMS)
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS, configuration.connectTimeoutMS)
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, configuration.socketTimeoutMS)
        guard let pool = mongoc_client_pool_new_with_error(uri, &error) else {
            mongoc_uri_destroy(uri)
            throw MongoError(.invalidURI, "cannot open a client pool: \(MongoError(error).message)")
        }
        mongoc_client_pool_set_error_api(pool, Int32(MONGOC_ERROR_API_VERSION_2))
        mongoc_client_pool_max_size(pool, UInt32(configuration.maxPoolSize))
        let name = mongoc_uri_get_database(uri).map { String(cString: $0) }
        self.defaultDatabaseName = (name?.isEmpty == false ? name : nil) ?? MongoConfiguration.defaultDatabaseName
        self.configuration = configuration
        self.uri = uri
        self.pool = pool
        self.threads = NIOThreadPool(numberOfThreads: configuration.maxPoolSize)
        self.threads.start()
    }

    deinit {
        // Every lease holds `self`, so none is running now; the threads may still be parked.
        if state.withLockedValue({ $0.lifecycle }) != .closed {
            threads.shutdownGracefully { _ in }
            mongoc_client_pool_destroy(pool)
        }
        mongoc_uri_destroy(uri)
    }

    /// The database called `name`, or the one the URI names.
    public func database(_ name: String? = nil) -> MongoDatabase {
        MongoDatabase(pool: self, name: name ?? defaultDatabaseName)
    }

    /// Clients leased now, and operations waiting for a thread.
    public var usage: (inUse: Int, waiting: Int) {
        state.withLockedValue { ($0.inUse, $0.waiting) }
    }

    /// Runs `body` with a leased client on one of the pool's threads, and always gives it back.
    ///
    /// The counts stay right whatever the exit: a caller cancelled while queued never runs `body` and
    /// stops counting as waiting; a pool shutting down (NIO answers `CancellationError` then too) is `poolClosed`.
    /// - Throws: `poolClosed` after `close()`, `CancellationError` when the caller was cancelled before its
    ///   turn, or what `body` throws.
    package func withClient<T: Sendable>(_ body: @escaping @Sendable (OpaquePointer) throws -> T) async throws -> T {
        try state.withLockedValue { state in
            guard state.lifecycle == .open else { throw MongoError(.poolClosed, "the database pool is closed") }
            state.waiting += 1
        }
        // Set on the pool's thread, under `state`'s lock, when `body`'s turn comes.
        let started = NIOLockedValueBox(false)
        defer {
            state.withLockedValue { state in
                if !started.withLockedValue({ $0 }) { state.waiting -= 1 }
            }
        }
        do {
            return try await threads.runIfActive { [self] in
                state.withLockedValue {
                    started.withLockedValue { $0 = true }
                    $0.waiting -= 1
                    $0.inUse += 1
                }
                defer { state.withLockedValue { $0.inUse -= 1 } }
                guard let client = mongoc_client_pool_pop(pool) else {
                    throw MongoError(.poolClosed, "the database pool gave no client")
                }
                defer { mongoc_client_pool_push(pool, client) }
                return try body(client)
            }
        } catch is CancellationError where state.withLockedValue({ $0.lifecycle != .open }) {
            throw MongoError(.poolClosed, "the database pool is closed")
        }
    }

    /// Checks that a server answers `ping` within the server-selection timeout.
    /// - Throws: `serverSelection`, `network` or `timeout` when it does not.
    public func ping() async throws {
        _ = try await database("admin").runCommand(["ping": 1])
    }

    /// Stops taking work, waits for running operations, releases the threads and closes the connections.
    ///
    /// The connections close here, not when the last reference to the pool goes: a closed hub's sockets must not
    /// stay open on the server (its connection cap) for as long as something still holds the pool.
    public func close() async {
        let shouldClose = state.withLockedValue { state -> Bool in
            guard state.lifecycle == .open else { return false }
            state.lifecycle = .closing
            return true
        }
        guard shouldClose else { return }
        try? await threads.shutdownGracefully()
        // No thread runs a lease now (NIO has run or cancelled every work item): no client is out of the pool.
        mongoc_client_pool_destroy(pool)
        state.withLockedValue { $0.lifecycle = .closed }
    }

    /// A new single-threaded client of the same URI, for a long-lived cursor that must not hold a pooled one.
    func makeDedicatedClient() throws -> OpaquePointer {
        guard let client = mongoc_client_new_from_uri(uri) else {
            throw MongoError(.invalidURI, "cannot create a client")
        }
        mongoc_client_set_error_api(client, Int32(MONGOC_ERROR_API_VERSION_2))
        return client
    }
}

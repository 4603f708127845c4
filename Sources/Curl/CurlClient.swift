import NIOConcurrencyHelpers
import NIOPosix

/// An HTTP client on libcurl for the relay: requests block a thread of the client's own thread pool, never an
/// event loop or a Swift concurrency thread, and reuse a small pool of curl handles so connections stay alive.
///
/// Call `shutdown()` when done (or use `withHTTPClient`).
public final class CurlClient: CurlHTTPClient {
    /// How the client connects and how long it waits.
    public struct Configuration: Sendable {
        /// Threads, and so at most as many curl handles and requests in flight at once.
        public var threads: Int
        /// The longest wait for a connection (TCP and TLS).
        public var connectTimeout: Duration
        /// The longest a whole request may take, connection included.
        public var requestTimeout: Duration
        /// A response body larger than this fails the request.
        public var maxResponseBytes: Int

        /// A configuration; the defaults suit FCM and Google's token endpoint.
        public init(
            threads: Int = 4,
            connectTimeout: Duration = .seconds(5),
            requestTimeout: Duration = .seconds(30),
            maxResponseBytes: Int = 4 << 20
        ) {
            self.threads = threads
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.maxResponseBytes = maxResponseBytes
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let threadPool: NIOThreadPool
    /// Handles not in use. Each running job takes one and puts it back, so there are never more handles than
    /// threads, and a handle keeps its connections alive between the requests it serves.
    private let idleHandles: NIOLockedValueBox<[PooledHandle]>
    private let isShutDown: NIOLockedValueBox<Bool>

    /// Starts a client and its threads.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.threads > 0, "an CurlClient needs at least one thread")
        self.configuration = configuration
        self.threadPool = NIOThreadPool(numberOfThreads: configuration.threads)
        self.threadPool.start()
        self.idleHandles = NIOLockedValueBox([])
        self.isShutDown = NIOLockedValueBox(false)
    }

    deinit {
        // A client dropped without `shutdown()`: stop its threads anyway (the pool asserts otherwise).
        if !isShutDown.withLockedValue({ $0 }) {
            threadPool.shutdownGracefully { _ in }
        }
    }

    /// Sends `method url` on a thread of the pool and returns the response, whatever its status.
    /// - Throws: `CurlError` (`.timeout`, `.connectFailed`, `.tls`, `.invalidRequest`, `.shutDown`, `.cancelled`,
    ///   `.other`) when no response arrived.
    public func send(_ method: CurlMethod, url: String, headers: [HTTPHeader], body: [UInt8]) async throws
        -> CurlResponse
    {
        try await perform(
            CurlRequest(
                method: method,
                url: url,
                headers: headers,
                body: body,
                connectTimeout: configuration.connectTimeout,
                timeout: configuration.requestTimeout,
                maxResponseBytes: configuration.maxResponseBytes
            ))
    }

    /// Sends `method url` to `pinned`'s address, whatever the URL's host resolves to now, over a connection of its
    /// own and with no proxy: the caller checked that address (a webhook's SSRF guard). TLS still verifies the
    /// certificate against the URL's host.
    /// - Throws: `CurlError`, as `send(_:url:headers:body:)`.
    public func send(
        _ method: CurlMethod, url: String, headers: [HTTPHeader], body: [UInt8],
        pinned: CurlPinnedAddress
    ) async throws -> CurlResponse {
        var request = CurlRequest(
            method: method, url: url, headers: headers, body: body,
            connectTimeout: configuration.connectTimeout, timeout: configuration.requestTimeout,
            maxResponseBytes: configuration.maxResponseBytes)
        request.pinned = pinned
        return try await perform(request)
    }

    /// Stops the threads once running requests finish, and frees the curl handles.
    /// - Throws: what `NIOThreadPool.shutdownGracefully()` throws.
    public func shutdown() async throws {
        let first = isShutDown.withLockedValue { wasShutDown in
            defer { wasShutDown = true }
            return !wasShutDown
        }
        guard first else { return }
        try await threadPool.shutdownGracefully()
        idleHandles.withLockedValue { $0.removeAll() }
    }

    /// The one path from async code to a blocking libcurl call: a job on the client's thread pool.
    private func perform(_ request: CurlRequest) async throws -> CurlResponse {
        do {
            return try await threadPool.runIfActive { [idleHandles] in
                let pooled = try idleHandles.withLockedValue { $0.popLast() } ?? PooledHandle(CurlHandle())
                defer { idleHandles.withLockedValue { $0.append(pooled) } }
                return try pooled.handle.perform(request)
            }
        } catch let error as CurlError {
            throw error
        } catch {
            // The pool says CancellationError both for a job the caller's cancellation withdrew and for one a
            // stopped pool refused: the task tells them apart.
            if Task.isCancelled {
                throw CurlError(code: .cancelled, message: "the request was cancelled before it was sent")
            }
            throw CurlError(code: .shutDown, message: "the HTTP client is shut down")
        }
    }
}

/// Runs `body` with a new client and shuts the client down afterwards, whether `body` returns or throws.
/// - Throws: what `body` throws.
public func withHTTPClient<Result: Sendable>(
    configuration: CurlClient.Configuration = CurlClient.Configuration(),
    _ body: (CurlClient) async throws -> Result
) async throws -> Result {
    let client = CurlClient(configuration: configuration)
    do {
        let result = try await body(client)
        try await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}

/// A curl handle in the idle list.
///
/// `@unchecked Sendable` because a `CurlHandle` is not thread-safe, yet only one thread uses it at a time:
/// a job takes it out of the lock-protected idle list, uses it on its own thread, and puts it back; no other
/// reference to it exists.
private struct PooledHandle: @unchecked Sendable {
    let handle: CurlHandle

    init(_ handle: CurlHandle) {
        self.handle = handle
    }
}

import CMongo
import NIOPosix

/// A change stream on a collection or a database: the changes other processes make, as they happen.
///
/// A change stream blocks for up to `maxAwaitTimeMS` in every `next()`, so it keeps a client and
/// a thread of its own rather than holding one of the pool's (which would starve the pool).
public final class ChangeStream: AsyncSequence, @unchecked Sendable {
    // @unchecked: `client` and `stream` are touched only on `thread`, whose one thread runs one call at a
    // time (so `close()` waits behind a `next()` blocked in libmongoc without holding any lock), or in
    // `deinit`, when no call can be running (each holds a reference).
    public typealias Element = BSONDocument

    private let thread: NIOThreadPool
    private var client: OpaquePointer?
    private var stream: OpaquePointer?
    private let maxAwait: Duration

    /// How long `next()` waits after an empty answer that came back early, before it asks again. A server may
    /// answer a waiting poll as soon as anything is written, even what the pipeline then drops (SecantusDB
    /// does): without the pause a stream filtered to a quiet collection would poll once per write of a busy
    /// one, costing the server a command each time. A change is seen at most this much later.
    public static let earlyEmptyPause = Duration.milliseconds(100)

    /// What a stream watches.
    enum Scope: Sendable {
        case collection(database: String, name: String)
        case database(String)
    }

    init(pool: MongoClientPool, scope: Scope, pipeline: [BSONDocument], maxAwaitTimeMS: Int32) async throws {
        self.thread = NIOThreadPool(numberOfThreads: 1)
        self.thread.start()
        self.maxAwait = .milliseconds(Int64(maxAwaitTimeMS))
        let pipelineDocument: BSONDocument = ["pipeline": .array(pipeline.map(BSONValue.document))]
        let options: BSONDocument = ["maxAwaitTimeMS": .int64(Int64(maxAwaitTimeMS))]
        let opened = OpenResult()
        do {
            try await thread.runIfActive {
                let client = try pool.makeDedicatedClient()
                opened.client = client
                let stream = try BSONPointers.with(pipelineDocument, options) { pipeline, options in
                    try Self.watch(scope, client: client, pipeline: pipeline, options: options)
                }
                opened.stream = stream
                var error = bson_error_t()
                if let stream, mongoc_change_stream_error_document(stream, &error, nil) {
                    throw MongoError(error)
                }
            }
        } catch {
            self.client = opened.client
            self.stream = opened.stream
            throw error
        }
        self.client = opened.client
        self.stream = opened.stream
    }

    /// Opens the libmongoc stream of `scope` on `client`.
    private static func watch(
        _ scope: Scope, client: OpaquePointer, pipeline: OpaquePointer?,
        options: OpaquePointer?
    ) throws -> OpaquePointer? {
        switch scope {
        case .collection(let database, let name):
            guard let handle = mongoc_client_get_collection(client, database, name) else {
                throw MongoError(.invalidArgument, "cannot open collection \(name)")
            }
            defer { mongoc_collection_destroy(handle) }
            return mongoc_collection_watch(handle, pipeline, options)
        case .database(let database):
            guard let handle = mongoc_client_get_database(client, database) else {
                throw MongoError(.invalidArgument, "cannot open database \(database)")
            }
            defer { mongoc_database_destroy(handle) }
            return mongoc_database_watch(handle, pipeline, options)
        }
    }

    deinit {
        closeHandles()
        thread.shutdownGracefully { _ in }
    }

    /// The next change, or nil when none arrived within `maxAwaitTimeMS` (call again to keep waiting); an
    /// empty answer that came back early returns after `earlyEmptyPause`.
    /// - Throws: the mapped `MongoError` when the stream failed (it cannot be resumed then).
    public func next() async throws -> BSONDocument? {
        let started = ContinuousClock.now
        let change = try await poll()
        if change == nil, ContinuousClock.now - started < maxAwait / 2 {
            try? await Task.sleep(for: Self.earlyEmptyPause)
        }
        return change
    }

    /// One `mongoc_change_stream_next` on the stream's thread.
    private func poll() async throws -> BSONDocument? {
        do {
            return try await thread.runIfActive { [self] in
                guard let stream else { throw MongoError(.cursor, "the change stream is closed") }
                var document: OpaquePointer?
                if mongoc_change_stream_next(stream, &document), let document {
                    return BSONDocument(copying: document)
                }
                var error = bson_error_t()
                if mongoc_change_stream_error_document(stream, &error, nil) { throw MongoError(error) }
                return nil
            }
        } catch is CancellationError where !Task.isCancelled {
            // `runIfActive` reports work given to a thread already shut down (by `close()`) as a cancellation:
            // the caller was not cancelled, the stream is closed.
            throw MongoError(.cursor, "the change stream is closed")
        }
    }

    /// Ends the stream and frees its client on the stream's own thread (after a `next()` in progress
    /// returns, without blocking the caller's thread); later `next()` calls throw.
    public func close() async {
        try? await thread.runIfActive { [self] in closeHandles() }
        try? await thread.shutdownGracefully()
    }

    /// Destroys the handles once; runs on `thread`, or in `deinit`.
    private func closeHandles() {
        if let stream { mongoc_change_stream_destroy(stream) }
        if let client { mongoc_client_destroy(client) }
        stream = nil
        client = nil
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ChangeStream
        /// Waits, across empty polls, for the next change; nil once the task is cancelled.
        public mutating func next() async throws -> BSONDocument? {
            while !Task.isCancelled {
                if let change = try await stream.next() { return change }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }

    /// Carries the new stream out of the thread's closure.
    private final class OpenResult: @unchecked Sendable {
        // @unchecked: written once on the stream's thread before `runIfActive` returns, read after.
        var client: OpaquePointer?
        var stream: OpaquePointer?
    }
}

extension MongoCollection {
    /// Watches the collection's changes (inserts, updates, replaces, deletes) from now on.
    /// - Throws: the mapped `MongoError`, for instance when the server offers no change streams.
    public func watch(pipeline: [BSONDocument] = [], maxAwaitTimeMS: Int32 = 1_000) async throws -> ChangeStream {
        try await ChangeStream(
            pool: pool, scope: .collection(database: databaseName, name: name), pipeline: pipeline,
            maxAwaitTimeMS: maxAwaitTimeMS)
    }
}

extension MongoDatabase {
    /// Watches the changes to every collection of the database from now on (`pipeline` can narrow them,
    /// for instance to some collections with `$match` on `ns.coll`).
    /// - Throws: the mapped `MongoError`, for instance when the server offers no change streams.
    public func watch(pipeline: [BSONDocument] = [], maxAwaitTimeMS: Int32 = 1_000) async throws -> ChangeStream {
        try await ChangeStream(pool: pool, scope: .database(name), pipeline: pipeline, maxAwaitTimeMS: maxAwaitTimeMS)
    }
}

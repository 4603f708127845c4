import CMongo
import NIOConcurrencyHelpers
import NIOPosix

/// A change stream on a collection: the changes other processes make, as they happen.
///
/// A change stream blocks for up to `maxAwaitTimeMS` in every `next()`, so it keeps a client and
/// a thread of its own rather than holding one of the pool's (which would starve the pool).
public final class ChangeStream: AsyncSequence, @unchecked Sendable {
    // @unchecked: `client` and `stream` are touched only on `thread`, one call at a time (each
    // `next()` awaits the previous one), and destroyed once, by `close()` or `deinit`, under `lock`.
    public typealias Element = BSONDocument

    private let thread: NIOThreadPool
    private let lock = NIOLock()
    private var client: OpaquePointer?
    private var stream: OpaquePointer?

    init(collection: MongoCollection, pipeline: [BSONDocument], maxAwaitTimeMS: Int32) async throws {
        self.thread = NIOThreadPool(numberOfThreads: 1)
        self.thread.start()
        let pool = collection.pool
        let databaseName = collection.databaseName
        let name = collection.name
        let pipelineDocument: BSONDocument = ["pipeline": .array(pipeline.map(BSONValue.document))]
        let options: BSONDocument = ["maxAwaitTimeMS": .int64(Int64(maxAwaitTimeMS)), "fullDocument": "updateLookup"]
        let opened = OpenResult()
        try await thread.runIfActive {
            let client = try pool.makeDedicatedClient()
            opened.client = client
            guard let handle = mongoc_client_get_collection(client, databaseName, name) else {
                throw MongoError(.invalidArgument, "cannot open collection \(name)")
            }
            defer { mongoc_collection_destroy(handle) }
            let stream = BSONPointers.with(pipelineDocument, options) { pipeline, options in
                mongoc_collection_watch(handle, pipeline, options)
            }
            opened.stream = stream
            var error = bson_error_t()
            if let stream, mongoc_change_stream_error_document(stream, &error, nil) {
                throw MongoError(error)
            }
        }
        self.client = opened.client
        self.stream = opened.stream
    }

    deinit {
        closeHandles()
        thread.shutdownGracefully { _ in }
    }

    /// The next change, or nil when none arrived within `maxAwaitTimeMS` (call again to keep waiting).
    /// - Throws: the mapped `MongoError` when the stream failed (it cannot be resumed then).
    public func next() async throws -> BSONDocument? {
        try await thread.runIfActive { [self] in
            try lock.withLock {
                guard let stream else { throw MongoError(.cursor, "the change stream is closed") }
                var document: OpaquePointer?
                if mongoc_change_stream_next(stream, &document), let document {
                    return BSONDocument(copying: document)
                }
                var error = bson_error_t()
                if mongoc_change_stream_error_document(stream, &error, nil) { throw MongoError(error) }
                return nil
            }
        }
    }

    /// Ends the stream and frees its client; later `next()` calls throw.
    public func close() async {
        closeHandles()
        try? await thread.shutdownGracefully()
    }

    private func closeHandles() {
        lock.withLock {
            if let stream { mongoc_change_stream_destroy(stream) }
            if let client { mongoc_client_destroy(client) }
            stream = nil
            client = nil
        }
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
        try await ChangeStream(collection: self, pipeline: pipeline, maxAwaitTimeMS: maxAwaitTimeMS)
    }
}

import CCurl
import Foundation
import NIOConcurrencyHelpers

/// An HTTP client on libcurl's multi interface for FCM: hundreds of requests in flight as HTTP/2 streams over a few
/// connections, driven by ONE dedicated thread, so no request blocks a thread of its own.
///
/// The thread loops on `curl_multi_poll`/`curl_multi_perform`; callers hand it requests through a locked queue and
/// wake it with `curl_multi_wakeup`; each request's continuation resumes when `curl_multi_info_read` says its
/// transfer is done. Over TLS HTTP/2 comes by ALPN (HTTP/1.1 when the server declines it); over plain http:// only
/// with `http2PriorKnowledge` (h2c). Over HTTP/1.1 it still works, one request a connection at a time.
///
/// The thread starts with the first request and stops at `shutdown()` or when the client is released, once the
/// transfers under way have ended; it then frees the multi handle.
public final class CurlMultiClient: CurlHTTPClient {
    /// How the client connects, how many requests it keeps in flight and how long it waits.
    public struct Configuration: Sendable, Hashable {
        /// Requests in flight at once (queued in libcurl or under way); more callers wait, without blocking a thread.
        public var maxRequestsInFlight = 512
        /// Connections to one host at most (CURLMOPT_MAX_HOST_CONNECTIONS); HTTP/2 streams share them.
        public var maxConnectionsPerHost = 4
        /// Streams one HTTP/2 connection carries at most (CURLMOPT_MAX_CONCURRENT_STREAMS; the server's own limit
        /// applies too).
        public var maxStreamsPerConnection = 100
        /// Speak HTTP/2 from the first byte to `http://` URLs (h2c with prior knowledge), for local stand-ins.
        public var http2PriorKnowledge = false
        /// The longest wait for a connection (TCP and TLS).
        public var connectTimeout: Duration = .seconds(5)
        /// The longest a whole request may take, from when libcurl takes it up (a wait for a connection counts).
        public var requestTimeout: Duration = .seconds(30)
        /// A response body larger than this fails the request.
        public var maxResponseBytes = 4 << 20

        /// A configuration with the defaults, which suit FCM, but for the two arguments; set the others as needed.
        public init(maxRequestsInFlight: Int = 512, http2PriorKnowledge: Bool = false) {
            self.maxRequestsInFlight = maxRequestsInFlight
            self.http2PriorKnowledge = http2PriorKnowledge
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let shared: NIOLockedValueBox<MultiShared>
    private let nextID = NIOLockedValueBox<UInt64>(0)

    /// A client; its thread starts with the first request.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.maxRequestsInFlight > 0, "a CurlMultiClient needs room for one request")
        self.configuration = configuration
        self.shared = NIOLockedValueBox(MultiShared())
    }

    deinit {
        // Released without `shutdown()`: the loop holds no reference to the client, so tell it to stop.
        shared.withLockedValue { $0.stop() }
    }

    /// The requests in libcurl's hands (easy handles added to the multi and not yet freed), for tests and metrics.
    public var transfersInProgress: Int { shared.withLockedValue { $0.active.count } }

    /// Sends `method url` through the multi and returns the response, whatever its status. Waits (suspended) while
    /// `maxRequestsInFlight` requests are in flight. Cancelling the task stops the transfer.
    /// - Throws: `CurlError` (`.timeout`, `.connectFailed`, `.tls`, `.invalidRequest`, `.shutDown`, `.cancelled`,
    ///   `.other`) when no response arrived.
    public func send(_ method: CurlMethod, url: String, headers: [HTTPHeader], body: [UInt8]) async throws
        -> CurlResponse
    {
        var request = CurlRequest(
            method: method, url: url, headers: headers, body: body,
            connectTimeout: configuration.connectTimeout, timeout: configuration.requestTimeout,
            maxResponseBytes: configuration.maxResponseBytes)
        if configuration.http2PriorKnowledge, url.lowercased().hasPrefix("http://") {
            request.version = .http2PriorKnowledge
        }
        // Wait for a connection that can take another stream rather than open one more.
        request.pipeWait = true
        let id = nextID.withLockedValue { id in
            id += 1
            return id
        }
        try await acquireSlot(id)
        defer { releaseSlot() }
        try startLoopIfNeeded()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlResponse, any Error>) in
                let refusal: CurlError? = shared.withLockedValue { shared in
                    if shared.isStopping { return .shutDownClient }
                    // The cancellation handler ran before the request was queued: it found nothing to cancel.
                    if Task.isCancelled { return .cancelledRequest }
                    shared.queue.append(Submission(id: id, request: request, continuation: continuation))
                    shared.multi?.wakeup()
                    return nil
                }
                if let refusal { continuation.resume(throwing: refusal) }
            }
        } onCancel: {
            let queued: Submission? = shared.withLockedValue { shared in
                if let index = shared.queue.firstIndex(where: { $0.id == id }) {
                    return shared.queue.remove(at: index)
                }
                if shared.active.contains(id) {
                    shared.cancelRequests.append(id)
                    shared.multi?.wakeup()
                }
                return nil
            }
            queued?.continuation.resume(throwing: CurlError.cancelledRequest)
        }
    }

    /// Stops taking requests, lets those under way end, stops the thread and frees the multi handle.
    public func shutdown() async {
        let (waiters, running) = shared.withLockedValue { shared in
            shared.stop()
            let waiters = shared.slotWaiters
            shared.slotWaiters.removeAll()
            return (waiters, shared.multi != nil)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: CurlError.shutDownClient) }
        guard running else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = shared.withLockedValue { shared in
                if shared.multi == nil { return true }
                shared.exitWaiters.append(continuation)
                return false
            }
            if exited { continuation.resume() }
        }
    }

    // MARK: Requests in flight

    /// Takes one of the `maxRequestsInFlight` places, waiting for one to be freed when none is left.
    private func acquireSlot(_ id: UInt64) async throws {
        let limit = configuration.maxRequestsInFlight
        let taken: Bool = try shared.withLockedValue { shared in
            if shared.isStopping { throw CurlError.shutDownClient }
            guard shared.inFlight < limit else { return false }
            shared.inFlight += 1
            return true
        }
        if taken { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Bool, CurlError> = shared.withLockedValue { shared in
                    if shared.isStopping { return .failure(.shutDownClient) }
                    if Task.isCancelled { return .failure(.cancelledRequest) }
                    if shared.inFlight < limit {
                        shared.inFlight += 1
                        return .success(true)
                    }
                    shared.slotWaiters.append(SlotWaiter(id: id, continuation: continuation))
                    return .success(false)
                }
                switch outcome {
                case .success(true): continuation.resume()
                case .success(false): break
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let waiter: SlotWaiter? = shared.withLockedValue { shared in
                guard let index = shared.slotWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return shared.slotWaiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CurlError.cancelledRequest)
        }
    }

    /// Gives a place back: to the longest waiting caller, or to the pool.
    private func releaseSlot() {
        let next: SlotWaiter? = shared.withLockedValue { shared in
            if shared.slotWaiters.isEmpty {
                shared.inFlight -= 1
                return nil
            }
            return shared.slotWaiters.removeFirst()
        }
        next?.continuation.resume()
    }

    // MARK: The loop

    /// Makes the multi handle and starts the loop's thread, once.
    /// - Throws: `CurlError` `.shutDown` after `shutdown()`, `.other` when libcurl cannot make or set up the multi.
    private func startLoopIfNeeded() throws {
        let configuration = configuration
        try shared.withLockedValue { shared in
            guard shared.multi == nil else { return }
            if shared.isStopping { throw CurlError.shutDownClient }
            let multi = try CurlMulti()
            try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
            try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
            try multi.set(CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maxStreamsPerConnection)
            shared.multi = multi
            let loop = MultiLoop(
                multi: multi, shared: self.shared,
                gate: PriorKnowledgeGate(
                    streams: configuration.maxStreamsPerConnection, connections: configuration.maxConnectionsPerHost))
            let thread = Thread { loop.run() }
            thread.name = "curl-multi"
            thread.start()
        }
    }
}

extension CurlError {
    /// A request the caller's task cancelled.
    static let cancelledRequest = CurlError(code: .cancelled, message: "the request was cancelled")
    /// A request made after `shutdown()`.
    static let shutDownClient = CurlError(code: .shutDown, message: "the HTTP client is shut down")
}

/// A request waiting for the loop to take it.
struct Submission: Sendable {
    let id: UInt64
    var request: CurlRequest
    let continuation: CheckedContinuation<CurlResponse, any Error>
    /// Set when `PriorKnowledgeGate` let it through.
    var ticket: GateTicket?
}

/// A caller waiting for a place among the requests in flight.
private struct SlotWaiter: Sendable {
    let id: UInt64
    let continuation: CheckedContinuation<Void, any Error>
}

/// What callers and the loop share, behind the client's lock. A continuation is in exactly one place at a time
/// (`queue`, the loop's transfers, or resumed), and whoever removes it resumes it: so it resumes once.
private struct MultiShared: Sendable {
    /// The multi while the loop runs; nil before it starts and after it ends.
    var multi: CurlMulti?
    /// Requests for the loop to add.
    var queue: [Submission] = []
    /// The ids of requests the loop has taken and not finished.
    var active: Set<UInt64> = []
    /// Ids in `active` whose task was cancelled, for the loop to stop.
    var cancelRequests: [UInt64] = []
    /// Places taken among `maxRequestsInFlight`.
    var inFlight = 0
    /// Callers waiting for a place, longest first.
    var slotWaiters: [SlotWaiter] = []
    /// Set by `shutdown()` or the client's release: no new request, the loop ends once idle.
    var isStopping = false
    /// `shutdown()` calls waiting for the loop to end.
    var exitWaiters: [CheckedContinuation<Void, Never>] = []

    mutating func stop() {
        isStopping = true
        multi?.wakeup()
    }
}

/// The loop on the client's thread: owns the multi's transfers (each an easy handle with its caller's
/// continuation). `@unchecked Sendable` because it is handed to its thread once and used there alone; what it
/// shares with callers goes through `shared`.
private final class MultiLoop: @unchecked Sendable {
    private struct Transfer {
        let id: UInt64
        let handle: CurlHandle
        let continuation: CheckedContinuation<CurlResponse, any Error>
        let ticket: GateTicket?
    }

    private let multi: CurlMulti
    private let shared: NIOLockedValueBox<MultiShared>
    /// h2c requests waiting for libcurl to be able to take them (only with a libcurl that needs it).
    private var gate: PriorKnowledgeGate
    /// The transfers in the multi, by easy handle (what `curl_multi_info_read` names).
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    /// The same transfers' easy handles by request id (what a cancellation names).
    private var handles: [UInt64: UnsafeMutableRawPointer] = [:]

    init(multi: CurlMulti, shared: NIOLockedValueBox<MultiShared>, gate: PriorKnowledgeGate) {
        self.multi = multi
        self.shared = shared
        self.gate = gate
    }

    /// Runs until the client stops and no transfer is left; then lets the multi go.
    func run() {
        while true {
            let (submissions, cancellations, stopping) = shared.withLockedValue { shared in
                let submissions = shared.queue
                shared.queue.removeAll()
                for submission in submissions { shared.active.insert(submission.id) }
                let cancellations = shared.cancelRequests
                shared.cancelRequests.removeAll()
                return (submissions, cancellations, shared.isStopping)
            }
            for submission in submissions { start(submission) }
            for id in cancellations { cancel(id) }
            if stopping, transfers.isEmpty, !gate.isHolding { break }
            multi.perform()
            while let done = multi.nextDone() { finish(done.easy, result: done.result) }
            // Sockets, libcurl's own timeouts and `wakeup()` end the wait sooner.
            multi.poll(timeoutMilliseconds: 1000)
        }
        let exitWaiters = shared.withLockedValue { shared in
            shared.multi = nil
            let waiters = shared.exitWaiters
            shared.exitWaiters.removeAll()
            return waiters
        }
        for waiter in exitWaiters { waiter.resume() }
    }

    /// Sets up an easy handle for the request and adds it to the multi (unless the gate holds it back); resumes the
    /// caller at once on failure.
    private func start(_ submission: Submission) {
        var submission = submission
        // A submission with a ticket was let through already (`release`).
        if PriorKnowledgeGate.isNeeded, submission.ticket == nil {
            guard let admitted = gate.admit(submission) else { return }
            submission = admitted
        }
        do {
            let handle = try CurlHandle()
            try handle.start(submission.request)
            try multi.add(handle)
            transfers[handle.pointer] = Transfer(
                id: submission.id, handle: handle, continuation: submission.continuation, ticket: submission.ticket)
            handles[submission.id] = handle.pointer
        } catch {
            // The handle, if made, is freed here: it never entered the multi.
            end(submission.id)
            submission.continuation.resume(throwing: error)
            release(submission.ticket, .other)
        }
    }

    /// Tells the gate that a transfer it let through ended, and starts what it lets through now.
    private func release(_ ticket: GateTicket?, _ outcome: PriorKnowledgeGate.Outcome) {
        guard let ticket else { return }
        for next in gate.finished(ticket, outcome) { start(next) }
    }

    /// The transfer libcurl says is done: out of the multi, its handle freed, its caller resumed with the outcome.
    private func finish(_ easy: UnsafeMutableRawPointer, result: CURLcode) {
        guard let (id, continuation, response, ticket) = take(easy, result: result) else { return }
        end(id)
        continuation.resume(with: response)
        release(ticket, (try? response.get())?.httpVersion == "HTTP/2" ? .http2 : .other)
    }

    /// A cancelled request's transfer: out of the multi, its handle freed, its caller resumed with `.cancelled`;
    /// or a request the gate holds back: taken out and resumed so.
    private func cancel(_ id: UInt64) {
        if let easy = handles[id], let (id, continuation, _, ticket) = take(easy, result: nil) {
            end(id)
            continuation.resume(throwing: CurlError.cancelledRequest)
            release(ticket, .cancelled)
        } else if let held = gate.withdraw(id) {
            end(id)
            held.continuation.resume(throwing: CurlError.cancelledRequest)
        }
    }

    /// Removes the transfer of `easy` from the multi and from the loop's tables, and frees its easy handle (the
    /// last reference goes when this returns, before the caller is resumed); with its response when libcurl
    /// ended it with `result`, `.cancelled` when abandoned (nil).
    private func take(_ easy: UnsafeMutableRawPointer, result: CURLcode?) -> (
        id: UInt64, continuation: CheckedContinuation<CurlResponse, any Error>,
        response: Result<CurlResponse, any Error>,
        ticket: GateTicket?
    )? {
        guard let transfer = transfers.removeValue(forKey: easy) else { return nil }
        handles[transfer.id] = nil
        multi.remove(transfer.handle)
        let response: Result<CurlResponse, any Error> =
            if let result {
                Result { try transfer.handle.finish(result) }
            } else {
                .failure(CurlError.cancelledRequest)
            }
        return (transfer.id, transfer.continuation, response, transfer.ticket)
    }

    /// Marks the request as no longer in libcurl's hands.
    private func end(_ id: UInt64) {
        shared.withLockedValue { _ = $0.active.remove(id) }
    }
}

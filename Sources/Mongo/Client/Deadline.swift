import Synchronization

/// Runs `operation` and returns its result, unless `deadline` comes first: then it throws `deadlineExceeded`
/// at once, and the operation runs on, unwatched, until it ends.
///
/// libmongoc's calls block a pool thread and cannot be interrupted (a hung server holds them until the socket
/// time-out), and a task group would wait for them; so the operation runs in a task of its own and the caller
/// stops waiting for it at the deadline, which the shared `DeadlineWatch` keeps (no timer per call). Whoever
/// finishes first resumes the caller, once.
/// - Throws: `MongoError.deadlineExceeded` (`.notAttempted` when the deadline had passed already), or what
///   `operation` throws.
public func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard ContinuousClock.now < deadline else {
        throw MongoError(.notAttempted, "the deadline had passed before the operation started")
    }
    let waiter = DeadlineWaiter<T>()
    return try await withCheckedThrowingContinuation { continuation in
        waiter.wait(continuation)
        let alarm = DeadlineWatch.shared.schedule(at: deadline) {
            waiter.finish(.failure(MongoError(.deadlineExceeded, "the operation did not end before its deadline")))
        }
        Task {
            do {
                waiter.finish(.success(try await operation()))
            } catch {
                waiter.finish(.failure(error))
            }
            DeadlineWatch.shared.cancel(alarm)
        }
    }
}

/// The caller of `withDeadline`, resumed by the first of the operation and the timer to finish.
private final class DeadlineWaiter<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    func finish(_ result: Result<T, any Error>) {
        let waiting = continuation.withLock { waiting in
            defer { waiting = nil }
            return waiting
        }
        waiting?.resume(with: result)
    }
}

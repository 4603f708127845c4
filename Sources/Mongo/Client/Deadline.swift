import Synchronization

/// Runs `operation` and returns its result, unless `deadline` comes first: then it throws `deadlineExceeded`
/// at once, and the operation runs on, unwatched, until it ends.
///
/// libmongoc's calls block a pool thread and cannot be interrupted (a hung server holds them until the socket
/// time-out), and a task group would wait for them; so the operation runs in a task of its own and the caller
/// stops waiting for it at the deadline. Whoever finishes first resumes the caller, once.
/// - Throws: `MongoError.deadlineExceeded` (`.notAttempted` when the deadline had passed already), or what `operation` throws.
public func withDeadline<T: Sendable>(_ deadline: ContinuousClock.Instant,
                                      _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    guard ContinuousClock.now < deadline else {
        throw MongoError(.notAttempted, "the deadline had passed before the operation started")
    }
    let waiter = Mutex<CheckedContinuation<T, any Error>?>(nil)
    @Sendable func finish(_ result: Result<T, any Error>) {
        waiter.withLock { waiting in
            waiting?.resume(with: result)
            waiting = nil
        }
    }
    return try await withCheckedThrowingContinuation { continuation in
        waiter.withLock { $0 = continuation }
        let timer = Task {
            try await Task.sleep(until: deadline, clock: .continuous)
            finish(.failure(MongoError(.deadlineExceeded, "the operation did not end before its deadline")))
        }
        Task {
            do {
                finish(.success(try await operation()))
            } catch {
                finish(.failure(error))
            }
            timer.cancel()
        }
    }
}

import Synchronization

/// Bounds the password checks running and waiting at once: at most `concurrency` run (bcrypt occupies a thread of
/// the blocking pool for each) and `queue` wait; one more is refused at once (`LoginRefusal.busy`), so a flood of
/// guesses costs the hub a bounded amount of work and real logins an answer, never an unbounded stall.
final class BcryptGate: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
        var started = 0
    }

    /// How many checks run at once.
    let concurrency: Int
    /// How many checks may wait for one of those.
    let queue: Int
    private let state = Mutex(State())

    init(concurrency: Int, queue: Int) {
        precondition(concurrency > 0 && queue >= 0, "a gate lets at least one check run")
        self.concurrency = concurrency
        self.queue = queue
    }

    /// How many checks have been let through since the gate was made (for tests and metrics: a throttled login
    /// must not add one).
    var started: Int { state.withLock { $0.started } }

    /// How many checks wait in line now.
    var queued: Int { state.withLock { $0.waiting.count } }

    /// Runs `body` once a place is free, waiting in line if the line is not full.
    /// - Throws: `LoginRefusal.busy` at once when every place is taken and the line is full; `CancellationError`
    ///   when the task is cancelled while waiting; what `body` throws.
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    private enum Admission { case run, wait, full, cancelled }

    private func enter() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let admission = state.withLock { state -> Admission in
                    if state.running < concurrency {
                        state.running += 1
                        state.started += 1
                        return .run
                    }
                    // Checked under the lock the cancel handler takes: either it ran first (and the flag is set)
                    // or it will find this waiter.
                    if Task.isCancelled { return .cancelled }
                    guard state.waiting.count < queue else { return .full }
                    state.waiting.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch admission {
                case .run: continuation.resume()
                case .wait: break
                case .full: continuation.resume(throwing: LoginRefusal.busy)
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Hands the place to the first in line, or frees it.
    private func leave() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            state.started += 1
            return state.waiting.removeFirst()
        }
        next?.continuation.resume()
    }
}

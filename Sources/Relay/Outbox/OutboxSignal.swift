import Synchronization

/// A wake-up call from the code that stores a message to this process's relay dispatcher.
///
/// Only a hint: the dispatcher also polls the database, so messages stored by other replicas are
/// found too. One waiter at a time (the dispatcher); a notify with nobody waiting is remembered.
public final class OutboxSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiter, or the next call to `wait` when nobody waits now.
    public func notify() {
        let waiter = state.withLock { state in
            defer { state.waiter = nil }
            if state.waiter == nil { state.pending = true }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns after a `notify()` (true) or after `timeout` or cancellation (false), whichever comes first.
    @discardableResult
    public func wait(timeout: Duration) async -> Bool {
        if state.withLock({ state in defer { state.pending = false }; return state.pending }) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { [self] in
                await waitForNotify()
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func waitForNotify() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

import Synchronization

/// Wakes a worker that waits for work: the relay worker when a message is stored, the subscription reconciler
/// when wishes change, a recorder's waiters when records are written.
///
/// Only a hint: the workers also poll (the database, or their own state), so nothing is lost to a wake-up
/// missed. One waiter at a time; a notify with nobody waiting is remembered.
public final class WakeSignal: Sendable {
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
        if state.withLock({ state in
            defer { state.pending = false }; return state.pending
        }) {
            return true
        }
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

import Foundation
import Synchronization

/// The end of a child process, awaited without holding a thread: `Process.waitUntilExit()` blocks the thread
/// it runs on, and a test that blocks one of the few threads of Swift's shared pool stalls every other test
/// and the in-process servers for as long as the child takes to stop. Made before the process runs (it
/// installs the process's `terminationHandler`).
public final class ProcessExit: Sendable {
    private let state = Mutex<(exited: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init(of process: Process) {
        process.terminationHandler = { [self] _ in
            let waiters = state.withLock { state in
                state.exited = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Whether the process has ended.
    public var hasExited: Bool { state.withLock { $0.exited } }

    /// Returns once the process has ended.
    public func wait() async {
        await withCheckedContinuation { continuation in
            let exited = state.withLock { state in
                if !state.exited { state.waiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }
}

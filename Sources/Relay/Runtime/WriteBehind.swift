import Synchronization

/// Write-behind for what the relay records as it happens (FCM's answers to sends, deliveries, applied
/// subscriptions): items are queued as they come and written together, a group commit. A first item waits `window`
/// for others (less once `batch` are queued), then up to `batch` of them go to `write` in one call; items queued
/// meanwhile go in the next. One write at a time, in the order the items came, so the commands do not grow with the
/// sends in flight and an item is on record within about `window` plus a round trip.
///
/// `write` owns its failures (it retries on `WriteRetry` and logs what it gives up on): an item handed to it counts
/// as done either way, so `drain` never waits on a failing database for ever.
final class WriteBehind<Item: Sendable>: Sendable {
    private struct State {
        var queue: [Item] = []
        /// The first item of `queue` not taken by a write yet.
        var head = 0
        var writing = false
        /// Items queued and items written (or given up on) so far: `drain` waits for the second to reach the first.
        var queued = 0
        var done = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Woken when `batch` items are queued before the window is over.
        var early: CheckedContinuation<Void, Never>?
        /// Counts the waits, so that a wait's timer never wakes a later one.
        var wait = 0

        var waiting: Int { queue.count - head }
    }

    private let window: Duration
    private let batch: Int
    private let write: @Sendable ([Item]) async -> Void
    private let written: @Sendable () -> Void
    private let state = Mutex(State())

    /// Writes through `write`, at most `batch` items a call, the first of them queued at most about `window` before;
    /// tells `written` after each write, once `held` counts it done.
    init(
        window: Duration, batch: Int, written: @escaping @Sendable () -> Void = {},
        write: @escaping @Sendable ([Item]) async -> Void
    ) {
        self.window = window
        self.batch = max(batch, 1)
        self.written = written
        self.write = write
    }

    /// How many items are queued or being written.
    var held: Int { state.withLock { $0.queued - $0.done } }

    /// Queues `item` for the next write.
    func record(_ item: Item) {
        record(CollectionOfOne(item))
    }

    /// Queues `items` for the next write, in order.
    func record(_ items: some Collection<Item>) {
        guard !items.isEmpty else { return }
        let (startsWriter, wake) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            state.queue.append(contentsOf: items)
            state.queued += items.count
            var wake: CheckedContinuation<Void, Never>?
            if state.waiting >= batch { swap(&wake, &state.early) }
            defer { state.writing = true }
            return (!state.writing, wake)
        }
        wake?.resume()
        // Not a child task: a write must not be cancelled with the worker that asked for it.
        if startsWriter { Task { await writeWhileQueued() } }
    }

    /// Returns once every item queued before the call is written (or given up on).
    func drain() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.done < state.queued else { return true }
                state.waiters.append((state.queued, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func writeWhileQueued() async {
        while true {
            await waitForBatch()
            let taken = state.withLock { state -> [Item] in
                let end = min(state.head + batch, state.queue.count)
                defer {
                    state.head = end
                    if state.head == state.queue.count {
                        state.queue = []
                        state.head = 0
                    } else if state.head > 4_096, state.head * 2 > state.queue.count {
                        state.queue.removeFirst(state.head)
                        state.head = 0
                    }
                }
                return Array(state.queue[state.head..<end])
            }
            if !taken.isEmpty { await write(taken) }
            let (waiters, finished) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                state.done += taken.count
                let done = state.done
                let ready = state.waiters.filter { $0.target <= done }.map(\.continuation)
                state.waiters.removeAll { $0.target <= done }
                // Decided under the lock that queues: an item queued after this starts a writer of its own.
                if state.waiting == 0 { state.writing = false }
                return (ready, !state.writing)
            }
            if !taken.isEmpty { written() }
            for waiter in waiters { waiter.resume() }
            if finished { return }
        }
    }

    /// Sleeps `window`, or less when `batch` items are queued first.
    private func waitForBatch() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLock { state -> Int? in
                if state.waiting >= batch { return nil }
                state.wait += 1
                state.early = continuation
                return state.wait
            }
            guard let wait else { return continuation.resume() }
            Task { [window] in
                try? await Task.sleep(for: window)
                state.withLock { state -> CheckedContinuation<Void, Never>? in
                    guard state.wait == wait else { return nil }
                    defer { state.early = nil }
                    return state.early
                }?.resume()
            }
        }
    }
}

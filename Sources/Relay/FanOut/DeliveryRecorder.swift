import DAO
import Logging
import Synchronization

/// Records FCM's answers to the fan-out's sends in bulk: answers wait at most `window` (or until `batch` of them
/// are queued) and are inserted together, each delivery written once with its answer (`DeliveryDAO.record`); the
/// devices FCM called gone are marked unregistered in the same round. So a process killed mid fan-out re-sends only what was in flight or
/// answered within the last window. Writes do not need the message's lease: what FCM answered stays true.
final class DeliveryRecorder: Sendable {
    private struct State {
        var queue: [DeliveryOutcome] = []
        var writing = false
        /// Answers queued and answers written (or given up on) so far: `drain` waits for the second to reach the first.
        var queued = 0
        var done = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Woken when `batch` answers are queued before the window is over.
        var early: CheckedContinuation<Void, Never>?
        /// Counts the waits, so that a wait's timer never wakes a later one.
        var wait = 0
    }

    private let deliveries: DeliveryDAO
    private let devices: DeviceDAO
    private let window: Duration
    private let batch: Int
    private let logger: Logger
    private let state = Mutex(State())

    init(
        deliveries: DeliveryDAO, devices: DeviceDAO, window: Duration = .milliseconds(100), batch: Int = 500,
        logger: Logger
    ) {
        self.deliveries = deliveries
        self.devices = devices
        self.window = window
        self.batch = max(batch, 1)
        self.logger = logger
    }

    /// Queues `outcome` for the next write.
    func record(_ outcome: DeliveryOutcome) {
        let (startsWriter, wake) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            state.queue.append(outcome)
            state.queued += 1
            var wake: CheckedContinuation<Void, Never>?
            if state.queue.count >= batch { wake = state.early; state.early = nil }
            defer { state.writing = true }
            return (!state.writing, wake)
        }
        wake?.resume()
        // Not a child task: a write must not be cancelled with the fan-out that asked for it.
        if startsWriter { Task { await writeWhileQueued() } }
    }

    /// Returns once every answer queued before the call is written (or given up on).
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
            let taken = state.withLock { state -> [DeliveryOutcome] in
                defer { state.queue = [] }
                return state.queue
            }
            if !taken.isEmpty { await write(taken) }
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.done += taken.count
                let done = state.done
                let ready = state.waiters.filter { $0.target <= done }.map(\.continuation)
                state.waiters.removeAll { $0.target <= done }
                if state.queue.isEmpty { state.writing = false }
                return ready
            }
            for waiter in waiters { waiter.resume() }
            if state.withLock({ !$0.writing }) { return }
        }
    }

    /// Sleeps `window`, or less when `batch` answers are queued first.
    private func waitForBatch() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLock { state -> Int? in
                if state.queue.count >= batch { return nil }
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

    /// Writes `outcomes` (and marks the gone devices), trying again a few times when the database fails.
    private func write(_ outcomes: [DeliveryOutcome]) async {
        let gone = outcomes.compactMap { $0.state == .unregistered ? $0.delivery.registration : nil }
        let written = await WriteRetry.run("recording deliveries failed", logger: logger) {
            try await deliveries.record(outcomes)
            if !gone.isEmpty { try await devices.markUnregistered(registrations: gone) }
        }
        if written { return }
        logger.error(
            "deliveries could not be recorded; their devices may be sent to again",
            metadata: ["deliveries": "\(outcomes.count)"])
    }
}

import DAO
import Synchronization

/// The hand-off, in memory, from the code that stores a message to this process's relay worker.
///
/// While a worker runs here and can take more, `lease(now:)` gives the lease to store with a new message
/// (in the same insert, so no claim is needed) and `handOff(_:)` gives the stored message to the worker,
/// which sends it at once. Otherwise (no worker here, FCM asked to pause, or a long queue) a message is
/// stored without a lease and `notify()` only wakes the worker, which claims it from the database as it
/// claims messages stored by other replicas, retries and scheduled sends. A leased message that never
/// arrives (the process died, the insert's outcome was unknown) is claimed by any worker once its lease
/// runs out.
public final class OutboxHandoff: Sendable {
    private struct State {
        /// The worker's lease name while it takes messages in memory.
        var owner: String?
        var leaseMS: Int64 = 0
        /// Messages handed over and not yet taken, at most.
        var limit = 0
        var paused = false
        /// Messages the worker holds already (waiting or being sent).
        var backlog = 0
        var queue: [Message] = []
        /// A message was stored without a lease since the worker last asked (it must be claimed).
        var storedWithoutLease = false
    }

    private let state = Mutex(State())
    /// Wakes the worker.
    private let signal = OutboxSignal()

    public init() {}

    /// The lease to store with a message that is due now, or nil when no worker here takes it in memory.
    public func lease(now: Int64) -> RelayLease? {
        state.withLock { state in
            guard let owner = state.owner, !state.paused,
                  state.queue.count + state.backlog < state.limit else { return nil }
            return RelayLease(owner: owner, until: now + state.leaseMS)
        }
    }

    /// Gives the worker a message stored with a lease from `lease(now:)`, and wakes it.
    public func handOff(_ message: Message) {
        let taken = state.withLock { state -> Bool in
            guard let owner = state.owner, RelayState(message: message.document)?.lease?.owner == owner else {
                return false  // the worker stopped meanwhile: the lease runs out and a claim takes the message
            }
            state.queue.append(message)
            return true
        }
        if taken { signal.notify() }
    }

    /// Wakes the worker to look in the database (a message stored without a lease).
    public func notify() {
        state.withLock { $0.storedWithoutLease = true }
        signal.notify()
    }

    // MARK: The worker's side

    /// Starts taking messages in memory under the lease `owner`, `leaseMS` long, at most `limit` waiting.
    func open(owner: String, leaseMS: Int64, limit: Int) {
        state.withLock { state in
            state.owner = owner
            state.leaseMS = leaseMS
            state.limit = limit
        }
    }

    /// Stops taking messages in memory and returns those handed over and not taken.
    func close() -> [Message] {
        state.withLock { state in
            state.owner = nil
            defer { state.queue = [] }
            return state.queue
        }
    }

    /// While paused, new messages are stored without a lease.
    func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    /// Tells how many messages the worker holds: past the limit, new ones are stored without a lease.
    func setBacklog(_ count: Int) {
        state.withLock { $0.backlog = count }
    }

    /// Whether a message was stored without a lease since the last call (so a claim should look for it soon);
    /// a wake-up for messages handed over in memory is not one, even when the worker took them already.
    func takeStoredWithoutLease() -> Bool {
        state.withLock { state in
            defer { state.storedWithoutLease = false }
            return state.storedWithoutLease
        }
    }

    /// Up to `count` messages handed over, oldest first.
    func take(_ count: Int) -> [Message] {
        state.withLock { state in
            let taken = Array(state.queue.prefix(max(count, 0)))
            state.queue.removeFirst(taken.count)
            return taken
        }
    }

    /// Returns after a hand-off or `notify()` (true) or after `timeout` or cancellation (false), whichever
    /// comes first. One waiter at a time; a wake-up with nobody waiting is remembered.
    @discardableResult
    func wait(timeout: Duration) async -> Bool {
        await signal.wait(timeout: timeout)
    }
}

import Mongo
import Synchronization

/// The hand-off, in memory, from the code that stores a message to this process's relay worker.
///
/// While a worker runs here and can take more, `ticket(now:)` numbers a message to store as `.direct` (the
/// worker's name and the number go in the same insert, so no claim is needed) and `handOff(_:ticket:)` gives
/// the stored message to the worker, which sends it at once and writes nothing for it when FCM takes it: the
/// worker's progress record (`RelayProgressDAO`) says how far it got. So every number given stays outstanding
/// here until the worker is done with its message, or until the message is known not to be stored
/// (`notStored`) or handed back to the outbox when that is unknown (`unsettled`): the progress never passes a
/// message that might still need sending.
///
/// Otherwise (no worker here, FCM asked to pause, or a long queue) a message is stored pending and `notify()`
/// only wakes the worker, which claims it from the database as it claims messages stored by other replicas,
/// retries and scheduled sends.
public final class OutboxHandoff: Sendable {
    private struct State {
        /// The worker's name for the messages it stores and sends itself (kept once closed, for its last report).
        var owner: String?
        /// The worker stopped taking messages in memory.
        var closed = true
        /// Until when the worker's progress record holds, as last written (Unix ms), and how much of that a
        /// new message needs left: no ticket is given on a record that may lapse before the message is sent.
        var recordUntil: Int64 = 0
        var margin: Int64 = 0
        /// Messages handed over and not yet taken, at most.
        var limit = 0
        var paused = false
        /// Messages the worker holds already (waiting or being sent).
        var backlog = 0
        var queue: [Message] = []
        /// A message was stored without a lease since the worker last asked (it must be claimed).
        var storedWithoutLease = false
        /// The next message's number under `owner`.
        var nextSeq: Int64 = 1
        /// The numbers given and not done with, and when each was given (Unix ms).
        var outstanding: [Int64: Int64] = [:]
        /// Numbers whose message may or may not be stored: the worker hands them back before they are done.
        var unsettled: [DirectRelay: Int64] = [:]
    }

    private let state = Mutex(State())
    /// Wakes the worker.
    private let signal = WakeSignal()

    public init() {}

    /// Numbers a message due now to be stored as `.direct` and sent by this process's worker, or nil when no
    /// worker here takes it in memory. Every ticket given must come back: `handOff`, `notStored` or `unsettled`.
    public func ticket(now: Int64) -> DirectRelay? {
        state.withLock { state in
            guard let owner = state.owner, !state.closed, !state.paused, now + state.margin <= state.recordUntil,
                state.queue.count + state.backlog < state.limit
            else { return nil }
            defer { state.nextSeq += 1 }
            state.outstanding[state.nextSeq] = now
            return DirectRelay(owner: owner, seq: state.nextSeq)
        }
    }

    /// Gives the worker `message`, stored for `ticket`, and wakes it; returns whether the message is stored
    /// with that ticket (`.direct`). One stored otherwise (an earlier request's, returned for the same
    /// Idempotency-Key, which any worker claims) gives the ticket back and asks the worker to claim.
    @discardableResult
    public func handOff(_ message: Message, ticket: DirectRelay) -> Bool {
        let isDirect = RelayState(message: message.document)?.direct == ticket
        state.withLock { state in
            // A worker that stopped or was taken over: its record is handed back to the outbox.
            guard ticket.owner == state.owner, !state.closed else { return }
            if isDirect {
                state.queue.append(message)
            } else {
                state.outstanding.removeValue(forKey: ticket.seq)
                state.storedWithoutLease = true
            }
        }
        signal.notify()
        return isDirect
    }

    /// Gives back the ticket of a message that was not stored.
    public func notStored(_ ticket: DirectRelay) {
        state.withLock { state in
            guard ticket.owner == state.owner else { return }
            state.outstanding.removeValue(forKey: ticket.seq)
        }
    }

    /// Gives back the ticket of a message that may be stored (its insert's outcome is unknown): the worker
    /// hands it back to the outbox, if it is there, for any worker to claim.
    public func unsettled(_ ticket: DirectRelay) {
        state.withLock { state in
            guard ticket.owner == state.owner, let at = state.outstanding[ticket.seq] else { return }
            state.unsettled[ticket] = at
        }
        signal.notify()
    }

    /// Wakes the worker to look in the database (a message stored without a lease).
    public func notify() {
        state.withLock { $0.storedWithoutLease = true }
        signal.notify()
    }

    /// Tells this process's worker that the message `id` was corrected or withdrawn while it may be sending it, so
    /// that it stops at once rather than at its next look at the database (which the workers of other replicas wait
    /// for).
    public func edited(_ id: ObjectID) {
        let listener = editListener.withLock { $0 }
        listener?(id)
    }

    /// Who `edited(_:)` tells: the worker's messages in hand.
    private let editListener = Mutex<(@Sendable (ObjectID) -> Void)?>(nil)

    /// Sets who `edited(_:)` tells.
    package func onEdit(_ listener: @escaping @Sendable (ObjectID) -> Void) {
        editListener.withLock { $0 = listener }
    }

    // MARK: The worker's side (the relay's, in this package)

    /// Starts taking messages in memory under the name `owner` (numbered from 1), at most `limit` waiting, once
    /// its progress record holds for `margin` ms more (`recordHeld`).
    package func open(owner: String, limit: Int, margin: Int64 = 0) {
        state.withLock { state in
            state.owner = owner
            state.closed = false
            state.recordUntil = 0
            state.margin = margin
            state.limit = limit
            state.nextSeq = 1
            state.outstanding = [:]
            state.unsettled = [:]
            state.queue = []
        }
    }

    /// Stops taking messages in memory and returns those handed over and not taken.
    package func close() -> [Message] {
        state.withLock { state in
            state.closed = true
            defer { state.queue = [] }
            return state.queue
        }
    }

    /// The progress record `owner` was written, and holds until `until` (Unix ms).
    package func recordHeld(owner: String, until: Int64) {
        state.withLock { state in
            if owner == state.owner { state.recordUntil = max(state.recordUntil, until) }
        }
    }

    /// Until when the progress record `owner` holds as last written (Unix ms); 0 for a record not current.
    package func recordUntil(owner: String) -> Int64 {
        state.withLock { $0.owner == owner ? $0.recordUntil : 0 }
    }

    /// The worker is done with the messages `seqs` of `owner`: sent, or their outcome written.
    package func done(_ seqs: some Sequence<Int64>, owner: String) {
        state.withLock { state in
            guard owner == state.owner else { return }
            for seq in seqs { state.outstanding.removeValue(forKey: seq) }
        }
    }

    /// The tickets whose message may be stored, for the worker to hand back, with when each was given (Unix ms).
    package func takeUnsettled() -> [(ticket: DirectRelay, at: Int64)] {
        state.withLock { state in
            defer { state.unsettled = [:] }
            return state.unsettled.map { ($0.key, $0.value) }
        }
    }

    /// What the worker's progress record says now: every number up to `through` is done with, and the numbers
    /// past it were given at `since` (Unix ms) or later; nil while no worker takes messages here.
    package func progress(now: Int64) -> (owner: String, through: Int64, since: Int64)? {
        state.withLock { state in
            guard let owner = state.owner else { return nil }
            let through = (state.outstanding.keys.min() ?? state.nextSeq) - 1
            return (owner, through, state.outstanding.values.min() ?? now)
        }
    }

    /// While paused, new messages are stored without a lease.
    package func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    /// Tells how many messages the worker holds: past the limit, new ones are stored without a lease.
    package func setBacklog(_ count: Int) {
        state.withLock { $0.backlog = count }
    }

    /// Whether a message was stored without a lease since the last call (so a claim should look for it soon);
    /// a wake-up for messages handed over in memory is not one, even when the worker took them already.
    package func takeStoredWithoutLease() -> Bool {
        state.withLock { state in
            defer { state.storedWithoutLease = false }
            return state.storedWithoutLease
        }
    }

    /// Up to `count` messages handed over, oldest first.
    package func take(_ count: Int) -> [Message] {
        state.withLock { state in
            let taken = Array(state.queue.prefix(max(count, 0)))
            state.queue.removeFirst(taken.count)
            return taken
        }
    }

    /// Returns after a hand-off or `notify()` (true) or after `timeout` or cancellation (false), whichever
    /// comes first. One waiter at a time; a wake-up with nobody waiting is remembered.
    @discardableResult
    package func wait(timeout: Duration) async -> Bool {
        await signal.wait(timeout: timeout)
    }
}

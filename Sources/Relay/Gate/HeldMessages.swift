import DAO
import Logging
import Mongo
import Synchronization

/// The messages a relay worker holds (waiting, being sent, or their last write not yet done), each under its
/// lease: a claim's, renewed while the message is held (`keepRenewed`), or for a message handed over in memory
/// its worker's progress record's. Shared with the worker's recorder, which lets a message go once the write
/// that ends its lease is done.
final class HeldMessages: Sendable {
    /// The `until` of a direct message's lease: it holds while its progress record does.
    static let recordHeld = Int64.max

    /// The leases, by message.
    let leases: LeaseKeeper<ObjectID>
    /// How long a claim's lease lasts.
    let lease: Duration
    /// Those whose outcome is written and not yet acknowledged.
    private let finishing = Mutex<Set<ObjectID>>([])
    /// The direct messages among them, and their number.
    private let direct = Mutex<[ObjectID: DirectRelay]>([:])
    private let metrics: RelayMetrics
    private let logger: Logger
    private let outbox: OutboxDAO
    private let now: UnixClock
    /// What the senders know of the edits of the messages they are sending (`watchEdits`).
    private let watches = Mutex<[ObjectID: EditWatch]>([:])

    init(
        outbox: OutboxDAO, handoff: OutboxHandoff, lease: Duration, metrics: RelayMetrics, logger: Logger,
        now: @escaping UnixClock
    ) {
        self.outbox = outbox
        self.now = now
        self.lease = lease
        self.metrics = metrics
        self.logger = logger
        self.leases = LeaseKeeper(
            duration: lease, now: now,
            end: { lease in
                lease.until == Self.recordHeld ? handoff.recordUntil(owner: lease.owner) : lease.until
            },
            renew: { due, until in
                let ids = Array(due.keys)
                let owners = Set(due.values.map(\.owner))
                let moved = try await outbox.renew(ids, leases: owners, until: until)
                metrics.renewed()
                return moved == ids.count ? Set(ids) : try await outbox.stillHeld(ids, leases: owners)
            })
    }

    /// How long a claim's lease lasts, in milliseconds.
    var leaseMS: Int64 { leases.durationMS }

    // MARK: Holding

    /// Holds a message handed over in memory; false when it is held already.
    func hold(direct message: Message) -> Bool {
        guard let relay = RelayState(message: message.document)?.direct,
            leases.holdIfFree(message.id, RelayLease(owner: relay.owner, until: Self.recordHeld))
        else { return false }
        direct.withLock { $0[message.id] = relay }
        return true
    }

    /// Holds a claimed message; false when it is held already (its lease moves to the claim's).
    func hold(claimed message: Message, lease: RelayLease) -> Bool {
        leases.hold(message.id, lease)
    }

    /// The lease of a held message as last confirmed.
    func lease(of id: ObjectID) -> RelayLease? {
        leases.lease(of: id)
    }

    /// The lease of a held message while it holds for at least a quarter of a lease yet, else nil: nothing is
    /// sent on a lease that may run out before FCM answers. A direct message's is its progress record's.
    func safeLease(of id: ObjectID) -> RelayLease? {
        leases.lease(of: id, holdingFor: leaseMS / 4)
    }

    /// The write of the message's outcome is queued: its lease is renewed only if that write is late.
    func finishing(_ id: ObjectID) {
        _ = finishing.withLock { $0.insert(id) }
    }

    // MARK: Letting go

    /// Lets go of messages whose lease a write ended; returns the numbers of the direct ones, by record.
    func release(_ ids: [ObjectID]) -> [String: [Int64]] {
        leases.release(ids)
        finishing.withLock { finishing in for id in ids { finishing.remove(id) } }
        var seqs: [String: [Int64]] = [:]
        direct.withLock { direct in
            for id in ids {
                if let relay = direct.removeValue(forKey: id) { seqs[relay.owner, default: []].append(relay.seq) }
            }
        }
        return seqs
    }

    /// Lets go of the direct message `id` with no write; returns its record's name, or nil when it was not held.
    func release(_ id: ObjectID, direct relay: DirectRelay) -> String? {
        guard direct.withLock({ $0.removeValue(forKey: id) }) == relay else { return nil }
        leases.release(id)
        return relay.owner
    }

    /// Stops holding a message at once, with no write to wait for.
    func release(_ id: ObjectID) {
        leases.release(id)
    }

    /// Holds the direct message `id` (numbered `relay`) under `lease` instead of its record: an edit handed it to the
    /// outbox under a lease of the record's name while this worker was sending it (`RelayNotice.Handover`). Returns
    /// the record's name, or nil when it was not held so.
    func takeOver(_ id: ObjectID, from relay: DirectRelay, lease: RelayLease) -> String? {
        guard direct.withLock({ $0.removeValue(forKey: id) }) == relay else { return nil }
        leases.hold(id, lease)
        return relay.owner
    }

    /// Lets go of every direct message of the record `owner`, which another worker took over.
    func forget(directOf owner: String) {
        let ids = direct.withLock { direct -> [ObjectID] in
            let ids = direct.filter { $0.value.owner == owner }.map(\.key)
            for id in ids { direct.removeValue(forKey: id) }
            return ids
        }
        leases.release(ids)
    }

    // MARK: Edits

    /// How often the messages being sent are checked for a correction or withdrawal stored by another process, and
    /// how long a message is sent before its first check (most are sent within it, and cost no read).
    static let editCheckInterval: Duration = .milliseconds(250)

    /// Starts watching the message `id`, read at edit `seen` (`relay.edit`), while it is being sent.
    func watch(_ id: ObjectID, seen: Int64) -> EditWatch {
        let watch = EditWatch(seen: seen, since: now())
        watches.withLock { $0[id] = watch }
        return watch
    }

    /// Stops watching the message `id`.
    func unwatch(_ id: ObjectID) {
        _ = watches.withLock { $0.removeValue(forKey: id) }
    }

    /// A correction or withdrawal of the message `id` was stored by this process: its sender stops at once.
    func edited(_ id: ObjectID) {
        watches.withLock { $0[id] }?.changed()
    }

    /// Every `editCheckInterval`, reads in one query by `_id` the `relay.edit` of the messages being sent for longer
    /// than that, and tells the senders of those edited since they read them. Returns when the task is cancelled.
    func watchEdits() async {
        let intervalMS = Self.editCheckInterval.milliseconds
        while !Task.isCancelled {
            do { try await Task.sleep(for: Self.editCheckInterval) } catch { return }
            let current = now()
            let due = watches.withLock { $0.filter { $0.value.isDue(at: current, after: intervalMS) } }
            guard !due.isEmpty else { continue }
            do {
                for (id, edit) in try await outbox.edits(of: Array(due.keys)) { due[id]?.note(edit) }
            } catch {
                logger.warning("reading the edits of the messages being sent failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Renewing

    /// Every quarter of a lease, moves on in one command the leases of the held messages that have less than
    /// five eighths of theirs left: a message sent and recorded within a couple of seconds is never renewed.
    /// Returns when the task is cancelled.
    func keepRenewed() async {
        let interval = max(lease / 4, .milliseconds(100))
        let leaseMS = self.leaseMS
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            // A message whose last write is queued is renewed only when that write is late: it usually lands
            // well within the lease, and renewing it would be a write more for the same message.
            let finishing = self.finishing.withLock { $0 }
            do {
                if let lost = try await leases.renewDue(leftBelow: { leaseMS * (finishing.contains($0) ? 3 : 5) / 8 }),
                    lost > 0
                {
                    // Written meanwhile (the recorder lets them go), or taken over: nothing more is sent for them.
                    metrics.lost(lost)
                }
            } catch {
                logger.warning("renewing relay leases failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// What the sender of a message knows of its edits: the `relay.edit` it read, and whether a correction or withdrawal
/// was stored since (told by this process, or found by `HeldMessages.watchEdits`).
final class EditWatch: Sendable {
    private struct State {
        var seen: Int64
        var changed = false
    }

    private let state: Mutex<State>
    /// When the sender started (Unix ms).
    private let since: Int64

    init(seen: Int64, since: Int64) {
        self.state = Mutex(State(seen: seen))
        self.since = since
    }

    /// The `relay.edit` the sender read last.
    var seen: Int64 { state.withLock { $0.seen } }

    /// Whether an edit was stored since: the sender stops, reads the message again (`saw`) and goes on as it now is.
    var isChanged: Bool { state.withLock { $0.changed } }

    /// The sender read the message at edit `edit`.
    func saw(_ edit: Int64) {
        state.withLock { $0 = State(seen: edit) }
    }

    /// An edit was stored.
    func changed() {
        state.withLock { $0.changed = true }
    }

    /// The stored count is `edit`.
    func note(_ edit: Int64) {
        state.withLock { if edit > $0.seen { $0.changed = true } }
    }

    /// Whether the database is to be asked: sent for at least `afterMS` and not known to be edited.
    func isDue(at now: Int64, after afterMS: Int64) -> Bool {
        now - since >= afterMS && !isChanged
    }
}

import DAO
import Logging
import Mongo
import Synchronization

/// An in-memory copy of a collection that a `DatabaseFollower` keeps current.
public struct FollowedCopy: Sendable {
    /// The collection copied.
    let collection: String
    /// Reloads the copy from the database.
    let reload: @Sendable () async throws -> Void
    /// How recently the database confirmed the copy.
    let freshness: Freshness
}

/// Follows the database so that in-memory copies of collections (the cube, the API tokens) see writes
/// by other replicas, or by hand, within a second: one change stream on the database, narrowed to
/// those collections and this process's fence, where the server offers change streams; polling
/// otherwise. Copies are confirmed current by fences (`FenceDAO`): every `fenceInterval`, and at once
/// after a change, the follower writes a numbered fence; when the stream delivers it, every change
/// made before it has been delivered too, so the follower reloads the copies whose collections
/// changed and confirms every copy current as of the moment the fence was written. An empty wait
/// proves nothing: a busy server's stream may still be behind.
public struct DatabaseFollower: Sendable {
    let database: MongoDatabase
    let copies: [FollowedCopy]
    let logger: Logger
    /// How often to write a fence (a small write, cheap to repeat).
    var fenceInterval: Duration = .milliseconds(250)
    /// How often to reload every copy when the server has no change streams (a whole reload each
    /// time, so not as often as fences; still well inside the second a copy may go unconfirmed).
    var pollInterval: Duration = .milliseconds(500)

    /// Follows until cancelled.
    public func run() async {
        // From now on the copies are trusted only while confirmed; the clock starts at the loads made at start-up.
        for copy in copies { copy.freshness.startFollowing() }
        let changes = ChangedCollections()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await follow(announcingTo: changes) }
            group.addTask { await keepConfirmed() }
            group.addTask { await reloadEarly(on: changes) }
            await group.next()
            changes.finish()
            group.cancelAll()
        }
    }

    /// Reloads a copy as soon as the stream announces a change to its collection, without waiting for
    /// the next fence: a load that starts after the change arrived sees it, so a write shows in memory
    /// one stream delivery and one load after it was made, however slow the fence's round trip. Only a
    /// fence confirms a copy current (a load confirms as of its own start); a burst of changes costs one
    /// load per collection for all the changes announced while the previous load ran.
    private func reloadEarly(on changes: ChangedCollections) async {
        for await collections in changes.batches {
            for copy in copies where collections.contains(copy.collection) {
                try? await copy.reload()
            }
        }
    }

    /// Reloads a copy the stream has not confirmed for half its allowed age (a busy server's stream runs
    /// behind): a reload confirms the copy as of its own start, so while the database answers reads, what it
    /// holds reaches the copies within a second however far behind the stream is.
    private func keepConfirmed() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: fenceInterval)
            for copy in copies {
                guard let age = copy.freshness.ageSeconds,
                    age > copy.freshness.maximumAge / .seconds(1) / 2
                else { continue }
                try? await copy.reload()
            }
        }
    }

    /// The change stream (or polling) loop.
    private func follow(announcingTo early: ChangedCollections) async {
        let fences = FenceDAO(database: database)
        var fenceNumber: Int64 = 0
        var backoff = Backoff(first: .milliseconds(200), cap: .seconds(5))
        while !Task.isCancelled {
            do {
                let stream = try await database.watch(
                    pipeline: [fences.changeFilter(collections: copies.map(\.collection))],
                    maxAwaitTimeMS: Int32((fenceInterval / .milliseconds(1)).rounded()))
                defer { Task { await stream.close() } }
                // Changes made before the stream opened would otherwise be missed; each reload confirms
                // its copy as of its own start.
                try await reloadAll()
                backoff.reset()
                // The fence written and not yet seen, with the moment before it was written.
                var outstanding: (number: Int64, writtenAt: ContinuousClock.Instant)?
                var lastFence = ContinuousClock.now - fenceInterval
                // Collections changed since the last fence arrived.
                var changed: Set<String> = []
                while !Task.isCancelled {
                    // A fence that never arrived (its write's answer was lost) is replaced.
                    if let fence = outstanding, ContinuousClock.now - fence.writtenAt > .seconds(5) {
                        outstanding = nil
                    }
                    if outstanding == nil, !changed.isEmpty || ContinuousClock.now - lastFence >= fenceInterval {
                        fenceNumber += 1
                        let writtenAt = ContinuousClock.now
                        try await fences.write(fenceNumber)
                        outstanding = (fenceNumber, writtenAt)
                        lastFence = writtenAt
                    }
                    guard let change = try await stream.next() else { continue }
                    if let number = fences.fenceNumber(in: change) {
                        guard let fence = outstanding, fence.number == number else { continue }
                        // Reloaded only now, after a later write arrived, so the loads surely see the
                        // changes announced before it; a burst of changes costs one load.
                        for copy in copies where changed.contains(copy.collection) {
                            try await copy.reload()
                        }
                        changed.removeAll()
                        confirmAll(asOf: fence.writtenAt)
                        outstanding = nil
                    } else if let collection = change[path: "ns.coll"]?.stringValue {
                        changed.insert(collection)
                        early.announce([collection])
                    } else {
                        // Not about one collection (a dropped database, say): reload everything.
                        changed.formUnion(copies.map(\.collection))
                        early.announce(Set(copies.map(\.collection)))
                    }
                }
            } catch  where Self.fallsBackToPolling(after: error) {
                logger.notice("the database offers no change streams; polling", metadata: ["error": "\(error)"])
                await poll()
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("following the database failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: backoff.next())
            }
        }
    }

    /// Whether `error` means the server offers no change streams, so polling is the only way. Only that does:
    /// any other failure (a lost connection, a cursor the server dropped, an interrupted command) opens the
    /// stream again after a backoff.
    static func fallsBackToPolling(after error: any Error) -> Bool {
        (error as? MongoError)?.code == .unsupported
    }

    private func reloadAll() async throws {
        for copy in copies { try await copy.reload() }
    }

    private func confirmAll(asOf instant: ContinuousClock.Instant) {
        for copy in copies { copy.freshness.confirm(asOf: instant) }
    }

    private func poll() async {
        while !Task.isCancelled {
            let asked = ContinuousClock.now
            for copy in copies {
                do {
                    try await copy.reload()
                    copy.freshness.confirm(asOf: asked)
                } catch {
                    logger.warning(
                        "reloading a followed collection failed",
                        metadata: ["collection": "\(copy.collection)", "error": "\(error)"])
                }
            }
            try? await Task.sleep(for: pollInterval)
        }
    }
}

/// The collections the change stream announced changed and no early reload has taken yet: the stream
/// adds, the reloader takes them all at once, so announcements never wait for a load.
final class ChangedCollections: Sendable {
    private let pending = Mutex<Set<String>>([])
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init() {
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Adds collections that changed.
    func announce(_ collections: Set<String>) {
        pending.withLock { $0.formUnion(collections) }
        signal.yield()
    }

    /// Ends `batches`.
    func finish() { signal.finish() }

    /// Every collection announced since the previous batch was taken, one set at a time.
    var batches: some AsyncSequence<Set<String>, Never> {
        signals.map { [self] in
            pending.withLock { taken in
                defer { taken = [] }; return taken
            }
        }
        .filter { !$0.isEmpty }
    }
}

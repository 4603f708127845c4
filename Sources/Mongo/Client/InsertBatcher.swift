import Synchronization

/// Inserts documents that callers hand in concurrently through shared `insertMany` commands (a group
/// commit): each caller still waits for its own document to be acknowledged, but the documents that
/// arrive while `maximumInFlight` commands are under way gather into the next one, so many concurrent
/// inserts cost a few round trips instead of one each. A caller that finds a command slot free sends
/// its document at once, so a lone insert waits for nothing.
///
/// Every document needs an `_id` (one is added when missing): when a shared command fails, each of
/// its documents is inserted again on its own, and one the failed command had already stored is
/// recognised by its `_id` and content, so every caller learns its own document's fate.
///
/// With a deadline (`insert(_:deadline:)`), a caller learns within it whether its document is stored,
/// is known not to be (nothing reached the server), or has an unknown outcome. That form is for documents
/// with new `_id`s (fresh ObjectIds): a document already stored under its `_id` counts as this one, even if
/// it has changed since (another process may have updated it).
public final class InsertBatcher: Sendable {
    public let collection: MongoCollection
    /// Documents per command at most.
    public let maximumBatch: Int
    /// Commands under way at once at most.
    public let maximumInFlight: Int

    private struct Waiter {
        /// Names the caller's document while it waits, so it can be withdrawn at its deadline.
        let ticket: Int
        let document: BSONDocument
        let continuation: CheckedContinuation<Turn, Never>
    }

    /// What a waiting caller is told to do.
    private enum Turn {
        /// Its document was handled: stored, or this error.
        case done((any Error)?)
        /// Send this batch (its own document first) and pass the turn on.
        case lead([Waiter])
    }

    private struct State {
        var waiting: [Waiter] = []
        var inFlight = 0
    }

    private let state = Mutex(State())
    private let commands = Atomic<Int>(0)
    private let tickets = Atomic<Int>(0)
    /// When each command under way was sent, by a number of its own.
    private let running = Mutex<(next: Int, started: [Int: ContinuousClock.Instant])>((0, [:]))

    /// Whether a command has been waiting for the database longer than `duration`: the database is hung or
    /// far too slow (readiness reports it). Such a command ends, and this with it, when the database answers
    /// again or the socket time-out gives up on it.
    public func hasCommandRunning(longerThan duration: Duration) -> Bool {
        let now = ContinuousClock.now
        return running.withLock { $0.started.values.contains { now - $0 > duration } }
    }

    /// Runs one insert command, counted and timed.
    private func command(_ body: () async throws -> Void) async throws {
        commands.add(1, ordering: .relaxed)
        let id = running.withLock { running in
            running.next += 1
            running.started[running.next] = .now
            return running.next
        }
        defer { _ = running.withLock { $0.started.removeValue(forKey: id) } }
        try await body()
    }

    /// Commands sent so far (inserts, shared or alone), to see how well documents gather.
    public var commandsSent: Int { commands.load(ordering: .relaxed) }

    public init(collection: MongoCollection, maximumBatch: Int = 64, maximumInFlight: Int = 1) {
        self.collection = collection
        self.maximumBatch = max(maximumBatch, 1)
        self.maximumInFlight = max(maximumInFlight, 1)
    }

    /// Inserts `document`, returning once the database has acknowledged it.
    /// - Throws: the `MongoError` of this document's insert.
    public func insert(_ document: BSONDocument) async throws {
        try await insert(document, ticket: tickets.add(1, ordering: .relaxed).newValue)
    }

    private func insert(_ document: BSONDocument, ticket: Int) async throws {
        let document = document.contains("_id") ? document : document.prepending("_id", .objectID(ObjectID()))
        let sendsNow = state.withLock { state in
            guard state.inFlight < maximumInFlight else { return false }
            state.inFlight += 1
            return true
        }
        if sendsNow { return try await send(own: document, with: []) }
        let turn = await withCheckedContinuation { continuation in
            let sendsAfterAll = state.withLock { state in
                // A slot may have come free between the two locks.
                guard state.inFlight < maximumInFlight else {
                    state.waiting.append(Waiter(ticket: ticket, document: document, continuation: continuation))
                    return false
                }
                state.inFlight += 1
                return true
            }
            if sendsAfterAll { continuation.resume(returning: .lead([])) }
        }
        switch turn {
        case .done(let error):
            if let error { throw error }
        case .lead(let others):
            try await send(own: document, with: others)
        }
    }

    /// Sends `own` with the documents of `others` in one command, tells each of `others` its outcome,
    /// passes the slot on, and returns or throws `own`'s outcome.
    private func send(own: BSONDocument, with others: [Waiter]) async throws {
        let outcomes = await store([own] + others.map(\.document))
        for (waiter, outcome) in zip(others, outcomes.dropFirst()) {
            waiter.continuation.resume(returning: .done(outcome))
        }
        passTurn()
        if let error = outcomes[0] { throw error }
    }

    /// Takes the document of `ticket` out of the queue if it still waits there (nothing of it was sent), and
    /// tells its caller `error`.
    private func withdraw(_ ticket: Int, error: MongoError) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return state.waiting.remove(at: index)
        }
        waiter?.continuation.resume(returning: .done(error))
    }

    /// Gives this command slot to the longest-waiting caller with a batch of those behind it, or frees it.
    private func passTurn() {
        let next: [Waiter]? = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            let batch = Array(state.waiting.prefix(maximumBatch))
            state.waiting.removeFirst(batch.count)
            return batch
        }
        if let next, let leader = next.first {
            leader.continuation.resume(returning: .lead(Array(next.dropFirst())))
        }
    }

    /// Inserts `documents` in one command; when it fails, each one on its own. Returns each one's error, or nil.
    private func store(_ documents: [BSONDocument]) async -> [(any Error)?] {
        do {
            try await command {
                if documents.count == 1 {
                    try await collection.insertOne(documents[0])
                } else {
                    try await collection.insertMany(documents, ordered: false)
                }
            }
            return documents.map { _ in nil }
        } catch {
            // A command that reached no server stored none of its documents.
            let reachedNothing = (error as? MongoError).map { $0.isUnavailable && !$0.mayHaveWritten } ?? false
            guard documents.count > 1, !reachedNothing else { return documents.map { _ in error } }
            var outcomes: [(any Error)?] = []
            for document in documents {
                outcomes.append(await storeAlone(document, after: error))
            }
            return outcomes
        }
    }

    /// Inserts `document` after a shared command failed with `shared`; stored already (by that command) counts
    /// as stored. When the shared command may have written it and this attempt reached nothing, its outcome
    /// stays the shared command's: unknown, not "not stored".
    private func storeAlone(_ document: BSONDocument, after shared: any Error) async -> (any Error)? {
        do {
            try await command { try await collection.insertOne(document) }
            return nil
        } catch let error as MongoError where error.code == .duplicateKey {
            let stored = try? await collection.findOne(["_id": document["_id"] ?? .null])
            return stored == document ? nil : error
        } catch let error as MongoError where !error.mayHaveWritten && (shared as? MongoError)?.mayHaveWritten == true {
            return shared
        } catch {
            return error
        }
    }

    /// Inserts `document` and returns once it is stored, at the latest at `deadline`.
    ///
    /// When the first attempt's outcome is unknown (the connection broke, or the database did not answer before
    /// the deadline), the same document (same `_id`) is inserted again until the deadline: a success, or a
    /// duplicate `_id`, means it is stored now, exactly once.
    /// - Throws: `outcomeUnknown` when that could not be settled before `deadline`; the `MongoError` of a write
    ///   known not to have happened (e.g. `serverSelection`: nothing was sent); or another refusal.
    public func insert(_ document: BSONDocument, deadline: ContinuousClock.Instant) async throws {
        let document = document.contains("_id") ? document : document.prepending("_id", .objectID(ObjectID()))
        var unknown: MongoError
        // A document still queued behind a hung command at the deadline was never sent: it is withdrawn, and
        // known not stored. One already sent is waited for a moment longer than that, then is unknown.
        let ticket = tickets.add(1, ordering: .relaxed).newValue
        let withdrawal = DeadlineWatch.shared.schedule(at: deadline) {
            self.withdraw(ticket, error: MongoError(.notAttempted, "the insert waited its turn until its deadline"))
        }
        defer { DeadlineWatch.shared.cancel(withdrawal) }
        do {
            try await withDeadline(deadline.advanced(by: .milliseconds(50))) {
                try await self.insert(document, ticket: ticket)
            }
            return
        } catch let error as MongoError where error.code == .duplicateKey {
            // Inserted again (a retry of an earlier request): only this document has this `_id`.
            return
        } catch let error as MongoError where error.mayHaveWritten {
            unknown = error
        }
        while ContinuousClock.now < deadline {
            do {
                try await withDeadline(deadline) {
                    try await self.command { try await self.collection.insertOne(document) }
                }
                return
            } catch let error as MongoError where error.code == .duplicateKey {
                // Only this document has this `_id`: the earlier attempt stored it.
                return
            } catch let error as MongoError where error.isUnavailable {
                if error.mayHaveWritten { unknown = error }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        throw MongoError(.outcomeUnknown, "the insert was not acknowledged before its deadline (\(unknown.code))")
    }
}

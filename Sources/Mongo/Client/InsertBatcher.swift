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
public final class InsertBatcher: Sendable {
    public let collection: MongoCollection
    /// Documents per command at most.
    public let maximumBatch: Int
    /// Commands under way at once at most.
    public let maximumInFlight: Int

    private struct Waiter {
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
                    state.waiting.append(Waiter(document: document, continuation: continuation))
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
        commands.add(1, ordering: .relaxed)
        do {
            if documents.count == 1 {
                try await collection.insertOne(documents[0])
            } else {
                try await collection.insertMany(documents, ordered: false)
            }
            return documents.map { _ in nil }
        } catch {
            guard documents.count > 1 else { return [error] }
            var outcomes: [(any Error)?] = []
            for document in documents {
                outcomes.append(await storeAlone(document))
            }
            return outcomes
        }
    }

    /// Inserts `document` after a shared command failed; stored already (by that command) counts as stored.
    private func storeAlone(_ document: BSONDocument) async -> (any Error)? {
        commands.add(1, ordering: .relaxed)
        do {
            try await collection.insertOne(document)
            return nil
        } catch let error as MongoError where error.code == .duplicateKey {
            let stored = try? await collection.findOne(["_id": document["_id"] ?? .null])
            return stored == document ? nil : error
        } catch {
            return error
        }
    }
}

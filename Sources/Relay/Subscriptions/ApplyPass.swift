import DAO

/// Applies the subscriptions that are due: reads a batch and calls FCM for it within the shared rate, a slice at
/// a time, while this process leads; the records follow the calls (`SubscriptionRecorder`).
struct ApplyPass: Sendable {
    /// How many subscriptions of a batch are called at once: the records handed to the recorder together.
    static let slice = 256

    let subscriptions: SubscriptionDAO
    let recorder: SubscriptionRecorder
    let calls: SubscriptionCalls
    let rate: RateWindow
    let leadership: Leadership
    /// Wakes the pass when new work comes.
    let signal: WakeSignal
    /// The most due subscriptions one batch reads.
    let batchLimit: Int
    /// The longest a batch waits for its records before it reads again.
    let longestWait: Duration

    /// Reads one batch of due subscriptions and applies it while this process leads. Returns how many
    /// subscriptions it read.
    /// - Throws: `DAOError`; `CancellationError`.
    func applyOnce() async throws -> Int {
        let read = try await readDue()
        let batch = recorder.work(in: read)
        if batch.isEmpty, !read.isEmpty {
            // All that is due waits for its record: nothing to call until those are written or new work comes.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await recorder.drain(timeout: longestWait) }
                group.addTask { await signal.wait(timeout: longestWait) }
                await group.next()
                group.cancelAll()
            }
            return read.count
        }
        var remaining = batch[...]
        while !remaining.isEmpty, !Task.isCancelled, try await leadership.lead() {
            guard await calls.waitOutPause() else { continue }
            await recorder.waitForRoom()
            // Only what the batch holds is taken from the shared allowance, so an idle replica spends none; up to a
            // second's at a time, so the database, busy with the records, is asked once a second, not once a slice.
            let granted = try await rate.take(remaining.count)
            var grant = remaining.prefix(granted.count), late: [TopicSubscription] = []
            remaining = remaining.dropFirst(granted.count)
            while !grant.isEmpty {
                let made = await calls.apply(grant.prefix(Self.slice), startingBefore: granted.deadline) {
                    try await subscriptions.retry($0, at: $1, error: $2)
                }
                recorder.record(made.applied)
                late += made.notStarted
                grant = grant.dropFirst(Self.slice)
                if !grant.isEmpty { await recorder.waitForRoom() }
            }
            // Those whose share of the window ran out before their call went out come next, in a later window.
            if !late.isEmpty { remaining = (late + remaining)[...] }
        }
        return read.count
    }

    /// Up to `batchLimit` due subscriptions besides those whose records the recorder holds, which a read returns
    /// too: the read goes past them.
    private func readDue() async throws -> [TopicSubscription] {
        recorder.beginRead()
        return try await subscriptions.due(limit: max(1, batchLimit) + recorder.held)
    }
}

import Mongo
import Synchronization
import Testing

/// The one sleeping task that keeps every write's deadline.
@Suite("Deadlines kept by one watch")
struct DeadlineWatchTests {
    @Test func actionsRunAtTheirDeadlinesInOrderAndCancelledOnesNever() async throws {
        let watch = DeadlineWatch()
        let ran = Mutex<[(name: String, late: Duration)]>([])
        let start = ContinuousClock.now
        func schedule(_ name: String, after milliseconds: Int) -> DeadlineWatch.Entry {
            let deadline = start + .milliseconds(milliseconds)
            return watch.schedule(at: deadline) { ran.withLock { $0.append((name, ContinuousClock.now - deadline)) } }
        }
        _ = schedule("third", after: 300)
        let cancelled = schedule("cancelled", after: 100)
        _ = schedule("second", after: 200)
        _ = schedule("first", after: 50)  // earlier than the one the watch sleeps for: it wakes for this one
        watch.cancel(cancelled)
        try await Task.sleep(for: .milliseconds(500))
        let runs = ran.withLock { $0 }
        #expect(runs.map(\.name) == ["first", "second", "third"])
        #expect(runs.allSatisfy { $0.late >= .zero && $0.late < .milliseconds(150) }, "\(runs)")

        // Once idle, a new deadline starts the watch again.
        _ = schedule("again", after: 600)
        try await Task.sleep(for: .milliseconds(250))
        #expect(ran.withLock { $0.map(\.name) }.last == "again")
    }
}

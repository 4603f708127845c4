import Mongo
import MongoTestSupport
import Synchronization
import Testing

/// The one sleeping task that keeps every write's deadline. No upper bound on lateness is asserted (the tests run
/// beside three hundred others on two cores): a watch that missed an earlier deadline would be 30 s late, not a
/// few milliseconds.
@Suite("Deadlines kept by one watch")
struct DeadlineWatchTests {
    @Test func actionsRunInDeadlineOrderNeverEarlyAndCancelledOnesNever() async throws {
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
        _ = schedule("first", after: 50)
        watch.cancel(cancelled)
        try await eventually { ran.withLock { $0.count } == 3 }
        try await Task.sleep(for: .milliseconds(50))
        let runs = ran.withLock { $0 }
        #expect(runs.map(\.name) == ["first", "second", "third"], "the cancelled one never runs")
        #expect(runs.allSatisfy { $0.late >= .zero }, "\(runs)")

        // Once idle, a new deadline starts the watch again.
        _ = schedule("again", after: 400)
        try await eventually { ran.withLock { $0.last?.name } == "again" }
    }

    @Test func anEarlierDeadlineWakesAWatchSleepingForALaterOne() async throws {
        let watch = DeadlineWatch()
        let ran = Atomic<Bool>(false)
        _ = watch.schedule(at: .now + .seconds(30)) {}
        _ = watch.schedule(at: .now + .milliseconds(20)) { ran.store(true, ordering: .relaxed) }
        try await eventually { ran.load(ordering: .relaxed) }
    }
}

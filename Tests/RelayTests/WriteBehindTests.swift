import Synchronization
import Testing

@testable import Relay

/// The one write-behind every recorder of the relay writes through (`WriteBehind`): group commits of at most a
/// batch, one at a time, in the order items came, and a drain that waits for exactly what was queued before it.
@Suite("Write-behind")
struct WriteBehindTests {
    /// A write target that holds each write until the test lets it go, and keeps what it was given.
    final class Target: Sendable {
        private struct State {
            var writes: [[Int]] = []
            var inFlight = 0
            var mostInFlight = 0
        }

        private let state = Mutex(State())
        let delay: Duration

        init(delay: Duration = .zero) { self.delay = delay }

        func write(_ items: [Int]) async {
            state.withLock { state in
                state.inFlight += 1
                state.mostInFlight = max(state.mostInFlight, state.inFlight)
            }
            if delay > .zero { try? await Task.sleep(for: delay) }
            state.withLock { state in
                state.writes.append(items)
                state.inFlight -= 1
            }
        }

        var writes: [[Int]] { state.withLock { $0.writes } }
        var mostInFlight: Int { state.withLock { $0.mostInFlight } }
    }

    @Test func itemsGoInBatchesOfAtMostTheBatchOneWriteAtATimeInOrder() async throws {
        let target = Target(delay: .milliseconds(5))
        let writes = WriteBehind<Int>(window: .milliseconds(20), batch: 100) { await target.write($0) }
        for item in 0..<1_050 { writes.record(item) }
        await writes.drain()
        #expect(target.writes.flatMap { $0 } == Array(0..<1_050))
        #expect(target.writes.allSatisfy { $0.count <= 100 })
        #expect(target.writes.count >= 11)
        #expect(target.mostInFlight == 1)
        #expect(writes.held == 0)
    }

    @Test func aFullBatchIsWrittenWithoutWaitingForTheWindow() async throws {
        let target = Target()
        let writes = WriteBehind<Int>(window: .seconds(60), batch: 10) { await target.write($0) }
        let start = ContinuousClock.now
        writes.record(Array(0..<10))
        await writes.drain()
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(target.writes == [Array(0..<10)])
    }

    @Test func aDrainWaitsForWhatWasQueuedBeforeItAndTheWrittenHookFollowsEachWrite() async throws {
        let target = Target(delay: .milliseconds(20))
        let told = Mutex(0)
        let writes = WriteBehind<Int>(window: .milliseconds(10), batch: 5, written: { told.withLock { $0 += 1 } }) {
            await target.write($0)
        }
        writes.record(Array(0..<12))
        #expect(writes.held == 12)
        await writes.drain()
        #expect(target.writes.flatMap { $0 } == Array(0..<12))
        #expect(told.withLock { $0 } == target.writes.count)
        // Nothing queued: a drain returns at once, and a later item starts a writer of its own.
        await writes.drain()
        writes.record(99)
        await writes.drain()
        #expect(target.writes.last == [99])
    }

    @Test func recordsFromManyTasksAreEachWrittenOnce() async throws {
        let target = Target()
        let writes = WriteBehind<Int>(window: .milliseconds(1), batch: 64) { await target.write($0) }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for item in 0..<500 {
                        writes.record(task * 1_000 + item)
                        if item % 50 == 0 { await Task.yield() }
                    }
                }
            }
        }
        await writes.drain()
        let written = target.writes.flatMap { $0 }
        #expect(written.count == 4_000 && Set(written).count == 4_000)
        #expect(target.mostInFlight == 1)
    }
}

import DAO
import Synchronization
import Testing

@Suite("Backoff")
struct BackoffTests {
    /// Numbers handed out in turn, then the last one again.
    final class Draws: Sendable {
        let values: [Double]
        let taken = Atomic<Int>(0)

        init(_ values: [Double]) { self.values = values }

        func next() -> Double { values[min(taken.add(1, ordering: .relaxed).oldValue, values.count - 1)] }
    }

    /// A random source that returns `values` in turn, then the last one again.
    static func drawing(_ values: [Double]) -> @Sendable () -> Double {
        let draws = Draws(values)
        return { draws.next() }
    }

    @Test func theWaitDoublesUpToTheCapAndStartsOverAfterASuccess() {
        var backoff = Backoff(first: .milliseconds(200), cap: .seconds(1), jitter: 0.5, random: Self.drawing([0]))
        #expect(
            (0..<5).map { _ in backoff.next() }
                == [.milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        backoff.reset()
        #expect(backoff.next() == .milliseconds(200))
        #expect(backoff.next() == .milliseconds(400))
    }

    @Test func jitterCutsAWaitByAtMostItsShareOfTheStep() {
        var backoff = Backoff(
            first: .seconds(1), cap: .seconds(8), jitter: 0.25, random: Self.drawing([1, 0.5, 0, 2, -1]))
        // 1 s cut by a quarter; 2 s by an eighth; 4 s not at all; draws outside 0...1 count as their bound.
        #expect(backoff.next() == .milliseconds(750))
        #expect(backoff.next() == .milliseconds(1_750))
        #expect(backoff.next() == .seconds(4))
        #expect(backoff.next() == .seconds(6))
        #expect(backoff.next() == .seconds(8))
    }

    @Test func theDefaultRandomSourceKeepsEveryWaitWithinItsBounds() {
        var backoff = Backoff(first: .milliseconds(100), cap: .milliseconds(400))
        let steps: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(400)]
        for step in steps {
            let wait = backoff.next()
            #expect(wait <= step && wait >= step * 0.75)
        }
    }

    @Test func aCapBelowTheFirstWaitIsTheFirstWait() {
        var backoff = Backoff(first: .seconds(2), cap: .seconds(1), jitter: 0, random: Self.drawing([0]))
        #expect(backoff.next() == .seconds(2))
        #expect(backoff.next() == .seconds(2))
    }
}

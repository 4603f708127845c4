/// The wait before trying again after failures in a row: it doubles with each failure up to a cap, and starts
/// over after a success (`reset()`). Every retry loop of the hub that waits on its own (a database that fails to
/// answer, a claim, a change stream) takes its waits from one of these.
///
/// Each wait is drawn at random in the upper `1 - jitter` of its step, never above it: processes that failed
/// together (every replica, when the database went away) do not all try again at the same instant, and the cap
/// still holds.
public struct Backoff: Sendable {
    /// The first wait's step: the longest the wait after one failure may be.
    public let first: Duration
    /// The largest step: no wait is longer.
    public let cap: Duration
    /// How much of a step a wait may be cut by at random, from 0 (never) to 1 (down to nothing).
    public let jitter: Double
    /// The step the next wait is drawn from.
    private var step: Duration
    /// A number in 0...1 for each wait; tests inject their own so that the waits are known.
    private let random: @Sendable () -> Double

    /// A backoff from `first` doubling up to `cap`, each wait cut by up to `jitter` of its step.
    public init(
        first: Duration, cap: Duration, jitter: Double = 0.25,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.first = first
        self.cap = max(cap, first)
        self.jitter = min(max(jitter, 0), 1)
        self.step = first
        self.random = random
    }

    /// The wait before the next attempt, after one more failure: the current step less up to `jitter` of it.
    /// The step then doubles, up to `cap`.
    public mutating func next() -> Duration {
        let wait = step * (1 - jitter * min(max(random(), 0), 1))
        step = min(step * 2, cap)
        return wait
    }

    /// An attempt succeeded: the next failure waits `first` again.
    public mutating func reset() {
        step = first
    }
}

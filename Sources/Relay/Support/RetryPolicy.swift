import FCM

/// When a message FCM could not take yet is tried again: exponential backoff with jitter, never sooner
/// than FCM's `Retry-After`, and not before a minute after a 429 `QUOTA_EXCEEDED`, as Google asks.
public struct RetryPolicy: Sendable, Hashable {
    /// The wait after the first failed attempt, before jitter.
    public var base: Duration
    /// The longest wait between attempts, before `Retry-After`.
    public var cap: Duration
    /// The least wait after a 429 `QUOTA_EXCEEDED` without `Retry-After` (Google's minute for sends); nil: only
    /// the backoff and `Retry-After` (topic subscription calls, whose 429 carries its own `Retry-After`).
    public var quotaPause: Duration?

    public init(
        base: Duration = .seconds(1), cap: Duration = .seconds(300),
        quotaPause: Duration? = FCMError.defaultQuotaRetryAfter
    ) {
        self.base = base
        self.cap = cap
        self.quotaPause = quotaPause
    }

    /// The wait before attempt `attempt + 1` after `error` (`attempt` counts from 1); `jitter` in 0...1 picks
    /// a point in the upper half of the backoff, so that many messages failing together spread out.
    public func delay(afterAttempt attempt: Int64, error: FCMError, jitter: Double = .random(in: 0...1)) -> Duration {
        var delay = delay(afterAttempt: attempt, retryAfter: error.retryAfter, jitter: jitter)
        if error.code == .quotaExceeded, let quotaPause { delay = max(delay, quotaPause) }
        return delay
    }

    /// The wait before attempt `attempt + 1` of a call that is not FCM's (a webhook delivery): the same backoff, never
    /// sooner than `retryAfter` when the other side asked for one.
    public func delay(
        afterAttempt attempt: Int64, retryAfter: Duration? = nil,
        jitter: Double = .random(in: 0...1)
    ) -> Duration {
        let exponent = Int(min(max(attempt - 1, 0), 30))
        let backoff = min(base * (1 << exponent), cap)
        var delay = backoff * (0.5 + 0.5 * min(max(jitter, 0), 1))
        if let retryAfter { delay = max(delay, retryAfter) }
        return delay
    }
}

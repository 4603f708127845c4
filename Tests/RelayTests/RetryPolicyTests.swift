import FCM
import Relay
import Testing

@Suite("Retry policy")
struct RetryPolicyTests {
    let unavailable = FCMError(code: .unavailable, httpStatus: 503, message: "down", isRetryable: true)

    @Test func backoffDoublesUpToTheCapWithJitterInTheUpperHalf() {
        let policy = RetryPolicy(base: .seconds(1), cap: .seconds(60))
        #expect(policy.delay(afterAttempt: 1, error: unavailable, jitter: 1) == .seconds(1))
        #expect(policy.delay(afterAttempt: 1, error: unavailable, jitter: 0) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 4, error: unavailable, jitter: 1) == .seconds(8))
        #expect(policy.delay(afterAttempt: 40, error: unavailable, jitter: 1) == .seconds(60))
        #expect(policy.delay(afterAttempt: 40, error: unavailable, jitter: 0) == .seconds(30))
        let spread = Set((0..<50).map { _ in policy.delay(afterAttempt: 3, error: unavailable) })
        #expect(spread.count > 10)
        #expect(spread.allSatisfy { $0 >= .seconds(2) && $0 <= .seconds(4) })
    }

    @Test func retryAfterIsHonouredAndQuotaWaitsAMinute() {
        let policy = RetryPolicy()
        var asked = unavailable
        asked.retryAfter = .seconds(7)
        #expect(policy.delay(afterAttempt: 1, error: asked, jitter: 1) == .seconds(7))
        let quota = FCMError(
            code: .quotaExceeded, httpStatus: 429, message: "slow down", isRetryable: true,
            retryAfter: .seconds(2))
        #expect(policy.delay(afterAttempt: 1, error: quota, jitter: 0) == .seconds(60))
    }
}

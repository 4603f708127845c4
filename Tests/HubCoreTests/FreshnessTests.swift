@testable import HubCore
import Testing

/// When an in-memory copy may be used: the rule under "a change shows within a second", checked with confirmation
/// moments set by the test rather than with the time a machine takes.
@Suite("Freshness of a followed copy")
struct FreshnessTests {
    /// Whether the database confirmed `freshness`'s copy as of a moment after `change`: the age is read after
    /// `now`, so `now - age` is at or before the confirmation.
    static func isConfirmed(_ freshness: Freshness, after change: ContinuousClock.Instant) -> Bool {
        let now = ContinuousClock.now
        guard let age = freshness.ageSeconds else { return false }
        return now - .seconds(age) > change
    }

    @Test func aCopyNobodyFollowsIsTrustedAndAFollowedOneOnlyWithinItsMaximumAge() {
        let unfollowed = Freshness()
        #expect(!unfollowed.isFollowed && unfollowed.isCurrent && unfollowed.ageSeconds == nil)

        let old = Freshness(maximumAge: .seconds(1))
        old.confirm(asOf: .now - .seconds(2))
        #expect(old.isFollowed)
        #expect(!old.isCurrent)
        #expect((old.ageSeconds ?? 0) >= 2)

        let recent = Freshness(maximumAge: .seconds(3_600))
        recent.confirm(asOf: .now - .seconds(2))
        #expect(recent.isCurrent)
    }

    @Test func aConfirmationNeverMovesBackAndAFollowerStartingAgainVouchesForNothing() {
        let freshness = Freshness(maximumAge: .seconds(60))
        let change = ContinuousClock.now - .seconds(10)
        freshness.confirm(asOf: change - .seconds(120))
        #expect(!freshness.isCurrent)
        #expect(!Self.isConfirmed(freshness, after: change))
        // A follower that reconnects after an outage keeps the old confirmation.
        freshness.startFollowing()
        #expect(!freshness.isCurrent)
        freshness.confirm(asOf: .now)
        #expect(freshness.isCurrent)
        #expect(Self.isConfirmed(freshness, after: change))
        freshness.confirm(asOf: change - .seconds(120))
        #expect(freshness.isCurrent)
        #expect(Self.isConfirmed(freshness, after: change))
    }
}

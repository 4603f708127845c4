import DAO
import HubTime
import MongoTestSupport
import Testing

@testable import Relay

@Suite("The send rate's shared windows, against the database")
struct RateWindowTests {
    /// A clock that runs at the real pace from `start` (Unix ms): the windows' seconds fall where the test says.
    static func clock(from start: Int64) -> UnixClock {
        let began = ContinuousClock.now
        return { start + Int64((ContinuousClock.now - began) / .milliseconds(1)) }
    }

    @Test func inASecondsLastHundredMillisecondsTheNextSecondsAllowanceIsTakenAndHandedOutWhenItBegins() async throws {
        try await TestDatabase.with { database in
            let rates = RateWindowDAO(database: database)
            // 50 ms before the end of second 5,000,000.
            let end: Int64 = 5_000_000_000
            let now = Self.clock(from: end - 50)
            let window = RateWindow(rates: rates, key: "test", limit: 100, now: now)
            let grant = try await window.take(60)
            #expect(grant.count == 60 && grant.windowEnd == end + 1_000)
            // Handed out once its second began, and counted in that second's window (not in the one it was taken in).
            #expect(now() >= end)
            #expect(try await rates.take(100, of: "test", limit: 100, windowMS: 1_000, at: end).granted == 40)
            #expect(try await rates.take(1, of: "test", limit: 100, windowMS: 1_000, at: end - 1).granted == 1)
            // That second's allowance spent: the next one's, handed out when it begins.
            let next = try await window.take(60)
            #expect(next.count == 60 && next.windowEnd == end + 2_000)
            #expect(now() >= end + 1_000)
        }
    }
}

import DAO
import HubTime
import Mongo
import MongoTestSupport
import Synchronization
import Testing

@testable import Relay

@Suite("The send rate's shared windows, against the database")
struct RateWindowTests {
    /// A clock that runs at the real pace from the time it was last `set` to (Unix ms): the windows' seconds fall
    /// where the test says, whatever the real time.
    final class TestClock: Sendable {
        private let origin = Mutex<(at: Int64, began: ContinuousClock.Instant)>((0, .now))

        func set(_ time: Int64) { origin.withLock { $0 = (time, .now) } }

        func now() -> Int64 {
            origin.withLock { $0.at + Int64((ContinuousClock.now - $0.began) / .milliseconds(1)) }
        }
    }

    @Test func aTakeWithRoomIsGrantedWholeARefusalCountsNothingAndConcurrentTakersNeverPassTheLimit() async throws {
        try await TestDatabase.with { database in
            let rates = RateWindowDAO(database: database)
            let windows = database.collection(CollectionName.rateWindows)
            let at: Int64 = 7_000_000_000
            // One at a time against a limit of 2: two granted, the third refused and not counted.
            for expected in [1, 1, 0, 0] {
                #expect(try await rates.take(1, of: "post", limit: 2, windowMS: 60_000, at: at).granted == expected)
            }
            let post = try await windows.findOne(["_id": .string("post:\(at / 60_000)")])
            #expect(post?["used"]?.int64Value == 2)
            #expect(post?["expire_at"] != nil)
            // Several at a time: whole while there is room, then what is left, then nothing.
            #expect(try await rates.take(4, of: "sends", limit: 10, windowMS: 1_000, at: at).granted == 4)
            #expect(try await rates.take(4, of: "sends", limit: 10, windowMS: 1_000, at: at).granted == 4)
            #expect(try await rates.take(4, of: "sends", limit: 10, windowMS: 1_000, at: at).granted == 2)
            #expect(try await rates.take(4, of: "sends", limit: 10, windowMS: 1_000, at: at).granted == 0)
            // Twenty first takers of a window at once, five allowed: five granted, whichever inserted the window.
            let granted = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await rates.take(1, of: "login", limit: 5, windowMS: 60_000, at: at).granted }
                }
                return try await group.reduce(0, +)
            }
            #expect(granted == 5)
        }
    }

    @Test func inASecondsLastHundredMillisecondsTheNextSecondsAllowanceIsTakenAndHandedOutWhenItBegins() async throws {
        try await TestDatabase.with { database in
            let rates = RateWindowDAO(database: database)
            let clock = TestClock()
            let window = RateWindow(rates: rates, key: "test", limit: 100, now: clock.now)
            // 50 ms before the end of second 5,000,000.
            let end: Int64 = 5_000_000_000
            clock.set(end - 50)
            let grant = try await window.take(60)
            #expect(grant.count == 60 && grant.windowEnd == end + 1_000)
            // Handed out once its second began, and counted in that second's window (not in the one it was taken in).
            #expect(clock.now() >= end)
            #expect(try await rates.take(100, of: "test", limit: 100, windowMS: 1_000, at: end).granted == 40)
            #expect(try await rates.take(1, of: "test", limit: 100, windowMS: 1_000, at: end - 1).granted == 1)
            // Half-way through that second, its allowance spent: a later second's (the next one's, unless the round
            // trips took most of a second), handed out when that second begins and counted there.
            clock.set(end + 500)
            let next = try await window.take(60)
            #expect(next.count == 60 && next.windowEnd >= end + 2_000, "\(next.windowEnd - end)")
            #expect(clock.now() >= next.windowEnd - 1_000)
            #expect(
                try await rates.take(100, of: "test", limit: 100, windowMS: 1_000, at: next.windowEnd - 1).granted
                    == 40)
        }
    }
}

import DAO
import Foundation
import HubTime
import Mongo
import MongoTestSupport
import Testing

@testable import Relay

/// The send pacer against the real shared window (`RateWindowDAO` on the test database): a hundred callers that find
/// no permit at the same moment share one take of the window, so they are all served within the rate, rather than
/// each asking for a chunk, each being told the window is spent (the window counts every chunk asked for before it
/// answers) and retrying in lock-step for ever.
@Suite("The send pacer with many callers at once")
struct SendPacerTests {
    @Test(.timeLimit(.minutes(1))) func aHundredCallersAtOnceAreAllServedWithinTheRate() async throws {
        try await TestDatabase.with { database in
            let window = RateWindow(
                rates: RateWindowDAO(database: database), key: "pacer-test", limit: 1_000,
                now: UnixTime.nowMilliseconds)
            let pacer = SendPacer(window: window, chunk: 100, now: UnixTime.nowMilliseconds)
            let started = Date()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<100 { group.addTask { _ = try await pacer.acquire() } }
                try await group.waitForAll()
            }
            // A hundred permits at 1,000 a second: well within a few seconds, whatever the database's pace.
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(pacer.used.values.reduce(0, +) == 100)
        }
    }
}

import Foundation
import Mongo
import MongoTestSupport
import Testing

@Suite("The client pool's counts")
struct MongoClientPoolTests {
    @Test func aCancelledQueuedCallLeavesTheInUseAndWaitingCountsAtZero() async throws {
        var configuration = MongoConfiguration(uri: try TestDatabase.uri())
        configuration.maxPoolSize = 1
        let pool = try MongoClientPool(configuration: configuration)
        // One thread, held by a slow call (bounded, so nothing can wait for ever), so the second call waits in the
        // queue; the test waits for each state rather than for a guessed time.
        let holding = Task { try await pool.withClient { _ in usleep(2_000_000) } }
        try await eventually { pool.usage.inUse == 1 }
        let queued = Task { try await pool.withClient { _ in 1 } }
        try await eventually { pool.usage.waiting == 1 }
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        try await holding.value
        #expect(pool.usage.inUse == 0)
        #expect(pool.usage.waiting == 0)

        // After close, a call is `poolClosed`, not a cancellation, and counts nothing.
        await pool.close()
        let error = await #expect(throws: MongoError.self) { try await pool.withClient { _ in 1 } }
        #expect(error?.code == .poolClosed)
        #expect(pool.usage.inUse == 0 && pool.usage.waiting == 0)
    }
}

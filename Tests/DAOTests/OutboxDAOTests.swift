import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("The relay outbox")
struct OutboxDAOTests {
    static let now: Int64 = 1_800_000_000_000

    /// Stores `count` pending messages due at `now` (or later ones when `dueIn` is given).
    func seed(_ database: MongoDatabase, count: Int, distribution: Distribution = .alert, dueIn: Int64 = 0) async throws -> [Message] {
        let messages = MessageDAO(database: database, now: { Self.now })
        var added: [Message] = []
        for index in 0..<count {
            let plan = RelayPlan(dueAt: Self.now + dueIn, deadlineAt: Self.now + 3_600_000)
            added.append(try await messages.add(MessageDraft(
                title: "t\(index)", desc: "d", message: "m", topicKey: "a-b-c", distribution: distribution, sender: "ann",
                extra: ["relay": .document(plan.document(for: distribution))])))
        }
        return added
    }

    @Test func aNewMessageStartsPendingWithItsDistributionsComponents() async throws {
        try await TestDatabase.with { database in
            let alert = try #require(try await seed(database, count: 1).first)
            let state = try #require(RelayState(message: alert.document))
            #expect(state.status == .pending && state.unsent == [.notification, .data])
            let information = try #require(try await seed(database, count: 1, distribution: .information).first)
            #expect(RelayState(message: information.document)?.unsent == [.data])
        }
    }

    @Test func concurrentClaimersNeverShareAMessage() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            _ = try await seed(database, count: 30)
            let outbox = OutboxDAO(database: database)
            let ids = try await withThrowingTaskGroup(of: [ObjectID].self) { group in
                for worker in 0..<6 {
                    group.addTask {
                        var claimed: [ObjectID] = []
                        while let message = try await outbox.claim(owner: "w\(worker)", now: Self.now, leaseMS: 60_000) {
                            claimed.append(message.id)
                        }
                        return claimed
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(ids.count == 30)
            #expect(Set(ids).count == 30)
        }
    }

    @Test func anExpiredLeaseIsClaimedAgainAndTheOldOwnerCanNoLongerWrite() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            #expect(try await outbox.claim(owner: "crashed", now: Self.now, leaseMS: 1_000)?.id == message.id)
            #expect(try await outbox.claim(owner: "other", now: Self.now + 500, leaseMS: 1_000) == nil)
            let again = try await outbox.claim(owner: "other", now: Self.now + 1_001, leaseMS: 1_000)
            #expect(again?.id == message.id)
            #expect(try await !outbox.recordSent(message.id, owner: "crashed", component: .data, name: "x", now: Self.now))
            #expect(try await outbox.recordSent(message.id, owner: "other", component: .data, name: "projects/p/messages/1", now: Self.now))
            #expect(try await outbox.release(message.id, owner: "other", status: .sent, now: Self.now))
            let stored = try #require(try await database.collection(CollectionName.message).findOne(["_id": .objectID(message.id)]))
            let state = try #require(RelayState(message: stored))
            #expect(state.status == .sent && state.attempts == 2)
            #expect(state.components[.data]?.name == "projects/p/messages/1")
            #expect(state.unsent == [.notification])
            #expect(stored[path: "relay.lease_owner"] == nil)
        }
    }

    @Test func retriesWaitUntilTheirDueTimeAndFailuresAreRecorded() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            _ = try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000)
            #expect(try await outbox.recordFailure(message.id, owner: "w", component: .notification, error: "UNAVAILABLE", permanent: false))
            #expect(try await outbox.release(message.id, owner: "w", status: .pending, retryAt: Self.now + 5_000, lastError: "UNAVAILABLE", now: Self.now))
            #expect(try await outbox.claim(owner: "w", now: Self.now + 4_999, leaseMS: 60_000) == nil)
            #expect(try await outbox.backlog(now: Self.now + 5_000).count == 1)
            #expect(try await outbox.claim(owner: "w", now: Self.now + 5_000, leaseMS: 60_000)?.id == message.id)
            #expect(try await outbox.recordFailure(message.id, owner: "w", component: .notification, error: "INVALID_ARGUMENT", permanent: true))
            let stored = try #require(try await database.collection(CollectionName.message).findOne([:]))
            let state = try #require(RelayState(message: stored))
            #expect(state.components[.notification]?.failed == true)
            #expect(state.components[.notification]?.attempts == 2)
            #expect(state.unsent == [.data])
        }
    }

    @Test func scheduledMessagesWaitForSendAt() async throws {
        try await TestDatabase.with { database in
            _ = try await seed(database, count: 2, dueIn: 60_000)
            let outbox = OutboxDAO(database: database)
            #expect(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 1_000) == nil)
            #expect(try await outbox.backlog(now: Self.now).count == 0)
            #expect(try await outbox.claim(owner: "w", now: Self.now + 60_000, leaseMS: 1_000) != nil)
        }
    }
}

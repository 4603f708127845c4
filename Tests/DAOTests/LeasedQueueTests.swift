@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// The one claim protocol every shared queue uses (`LeasedQueue`): the outbox, webhook deliveries, quiet-hours
/// deferrals and escalation steps take, renew and give back work under the same lease encoding.
@Suite("Leased queues")
struct LeasedQueueTests {
    static let now: Int64 = 1_800_000_000_000

    /// `count` pending webhook deliveries due one millisecond apart, the oldest first; their ids in that order.
    static func deliveries(_ count: Int, in database: MongoDatabase) async throws -> [ObjectID] {
        let ids = (0..<count).map { _ in ObjectID() }
        _ = try await database.collection(CollectionName.webhookDeliveries).insertMany(
            ids.enumerated().map { index, id in
                [
                    "_id": .objectID(id), "webhook": .objectID(ObjectID()), "event": "message.sent", "body": "{}",
                    "created_at": .int64(now - 1_000), "state": "pending", "due_at": .int64(now - 1_000 + Int64(index)),
                    "attempts": 0,
                ]
            })
        return ids
    }

    @Test func twoClaimsNeverShareADocumentAndARunOutLeaseIsFreeAgain() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let ids = try await Self.deliveries(6, in: database)
            let dao = WebhookDeliveryDAO(database: database)
            let first = try #require(try await dao.claim(owner: "a", now: Self.now, leaseMS: 1_000, limit: 4))
            #expect(first.deliveries.map(\.id) == Array(ids.prefix(4)))
            let second = try #require(try await dao.claim(owner: "b", now: Self.now, leaseMS: 1_000, limit: 4))
            #expect(second.deliveries.map(\.id) == Array(ids.suffix(2)))
            #expect(try await dao.claim(owner: "c", now: Self.now + 1_000, leaseMS: 1_000, limit: 4) == nil)
            // The leases run out (a lease holds through its `until`): every delivery is due again, the oldest first,
            // an attempt counted again.
            let third = try #require(try await dao.claim(owner: "c", now: Self.now + 1_001, leaseMS: 1_000, limit: 8))
            #expect(third.deliveries.map(\.id) == ids)
            #expect(third.deliveries.first?.attempts == 2)
            // The first lease records nothing any more; the third does.
            #expect(
                try await dao.record(.delivered(status: 200), for: ids[0], lease: first.lease, now: Self.now) == false)
            #expect(try await dao.record(.delivered(status: 200), for: ids[0], lease: third.lease, now: Self.now))
        }
    }

    @Test func aReleaseFreesAtOnceAndTakesBackTheAttempt() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let ids = try await Self.deliveries(1, in: database)
            let dao = WebhookDeliveryDAO(database: database)
            let claim = try #require(try await dao.claim(owner: "a", now: Self.now, leaseMS: 60_000, limit: 1))
            try await dao.release(ids[0], lease: "someone else's")
            #expect(try await dao.claim(owner: "b", now: Self.now, leaseMS: 60_000, limit: 1) == nil)
            try await dao.release(ids[0], lease: claim.lease)
            let again = try #require(try await dao.claim(owner: "b", now: Self.now, leaseMS: 60_000, limit: 1))
            #expect(again.deliveries.first?.attempts == 1)
            let stored = try await database.collection(CollectionName.webhookDeliveries).findOne([
                "_id": .objectID(ids[0])
            ])
            #expect(stored?["lease_owner"]?.stringValue == again.lease)
        }
    }

    @Test func aClaimPassesOverWhatOthersHoldToTheFreeDocumentsBehind() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let ids = try await Self.deliveries(40, in: database)
            let dao = WebhookDeliveryDAO(database: database)
            // Another replica holds the 32 oldest.
            let held = try #require(try await dao.claim(owner: "a", now: Self.now, leaseMS: 60_000, limit: 32))
            #expect(held.deliveries.count == 32)
            let claim = try #require(try await dao.claim(owner: "b", now: Self.now, leaseMS: 60_000, limit: 32))
            #expect(claim.deliveries.map(\.id) == Array(ids.suffix(8)))
        }
    }

    @Test func theOutboxRenewsOnlyWhatItsLeasesStillHold() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let messages = database.collection(CollectionName.message)
            let ids = (0..<3).map { _ in ObjectID() }
            _ = try await messages.insertMany(
                ids.enumerated().map { index, id in
                    [
                        "_id": .objectID(id), "msi_key": .objectID(ObjectID()), "timestamp": .int64(Self.now),
                        "relay": ["state": "pending", "due_at": .int64(Self.now - 10 + Int64(index)), "attempts": 0],
                    ]
                })
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "a", now: Self.now, leaseMS: 1_000, limit: 2))
            #expect(batch.messages.map(\.id) == Array(ids.prefix(2)) && batch.leaseUntil == Self.now + 1_000)
            #expect(batch.messages.allSatisfy { $0.document[path: "relay.attempts"]?.int64Value == 1 })
            // The lease runs out and another worker takes one of the two.
            let other = try #require(
                try await outbox.claim(owner: "b", now: Self.now + 1_001, leaseMS: 1_000, limit: 1))
            #expect(other.messages.map(\.id) == [batch.messages[0].id])
            #expect(
                try await outbox.renew(batch.messages.map(\.id), leases: [batch.lease], until: Self.now + 5_000) == 1)
            #expect(
                try await outbox.stillHeld(batch.messages.map(\.id), leases: [batch.lease]) == [batch.messages[1].id])
            try await outbox.release(batch.messages.map(\.id), leases: [batch.lease])
            let last = try #require(try await outbox.claim(owner: "c", now: Self.now + 1_001, leaseMS: 1_000, limit: 8))
            #expect(Set(last.messages.map(\.id)) == Set([batch.messages[1].id, ids[2]]))
        }
    }

    @Test func aQuietDeferralIsLeasedNotMovedAndARetryIsDueAtItsTimeUnleased() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let clock = ManualClock(Self.now)
            let collection = database.collection(CollectionName.quietDeferrals)
            _ = try await collection.insertMany(
                ["m1:d1", "m1:d2"].map {
                    [
                        "_id": .string($0), "message": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                        "device": .objectID(ObjectID()), "platform": "android", "state": "pending",
                        "due_at": .int64(Self.now - 5), "attempts": 0,
                    ]
                })
            let dao = QuietDeferralDAO(database: database, now: clock.now)
            let claimed = try await dao.claim(owner: "a", leaseMS: 30_000, limit: 8)
            #expect(claimed.map(\.id) == ["m1:d1", "m1:d2"])
            #expect(try await dao.claim(owner: "b", leaseMS: 30_000, limit: 8).isEmpty)
            // Its due time stays what it was: a report reads when it was due, the lease says who sends it.
            let stored = try #require(try await collection.findOne(["_id": "m1:d1"]))
            #expect(stored["due_at"]?.int64Value == Self.now - 5 && stored["lease_owner"] != nil)
            // FCM asked to wait 2 s: due then, for any replica, though the claim's lease would hold 30 s.
            try await dao.retry("m1:d1", at: Self.now + 2_000)
            clock.set(Self.now + 2_000)
            #expect(try await dao.claim(owner: "b", leaseMS: 30_000, limit: 8).map(\.id) == ["m1:d1"])
            // The lease of the other runs out: due again.
            clock.set(Self.now + 30_001)
            #expect(try await dao.claim(owner: "c", leaseMS: 30_000, limit: 8).map(\.id) == ["m1:d2"])
        }
    }
}

import DAO
import Mongo
@testable import Relay
import Testing

@Suite("The in-memory hand-off")
struct OutboxHandoffTests {
    /// A message as `MessageService` stores it with the lease `lease`.
    static func message(leasedTo lease: RelayLease) throws -> Message {
        let document: BSONDocument = [
            "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": "Closed", "desc": "", "message": "",
            "topic_key": "a-b-c", "distribution": "Information", "sender": "ann", "timestamp": .int64(1_000),
            "relay": ["state": "pending", "due_at": .int64(1_000), "lease_owner": .string(lease.owner),
                      "lease_until": .int64(lease.until)],
        ]
        return try #require(Message(document: document))
    }

    @Test func onlyAMessageStoredWithoutALeaseAsksTheWorkerToClaim() async throws {
        let handoff = OutboxHandoff()
        handoff.open(owner: "worker-1", leaseMS: 5_000, limit: 4)
        let lease = try #require(handoff.lease(now: 1_000))
        #expect(lease == RelayLease(owner: "worker-1", until: 6_000))

        // Handed over in memory: the worker takes it; no claim is asked for, even once the queue is empty.
        handoff.handOff(try Self.message(leasedTo: lease))
        #expect(await handoff.wait(timeout: .seconds(1)))
        #expect(handoff.take(.max).count == 1)
        #expect(!handoff.takeStoredWithoutLease())

        // Stored without a lease (a paused relay, a long queue): the worker is woken and asked to claim, once.
        handoff.notify()
        #expect(await handoff.wait(timeout: .seconds(1)))
        #expect(handoff.takeStoredWithoutLease())
        #expect(!handoff.takeStoredWithoutLease())

        // Past the limit, new messages get no lease.
        handoff.setBacklog(4)
        #expect(handoff.lease(now: 2_000) == nil)
    }
}

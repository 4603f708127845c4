import DAO
import Mongo
import Testing

@Suite("The in-memory hand-off")
struct OutboxHandoffTests {
    /// A message as `MessageService` stores it with the ticket `ticket`.
    static func message(storedWith ticket: DirectRelay) throws -> Message {
        let plan = RelayPlan(dueAt: 1_000, deadlineAt: 9_000, direct: ticket)
        let document: BSONDocument = [
            "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": "Closed", "desc": "",
            "message": "",
            "topic_key": "a-b-c", "distribution": "Information", "sender": "ann", "timestamp": .int64(1_000),
            "relay": .document(plan.document(for: .information)),
        ]
        return try #require(Message(document: document))
    }

    @Test func onlyAMessageStoredWithoutALeaseAsksTheWorkerToClaim() async throws {
        let handoff = OutboxHandoff()
        handoff.open(owner: "worker-1", limit: 4, margin: 100)
        // No ticket before the worker's progress record holds for the margin.
        #expect(handoff.ticket(now: 1_000) == nil)
        handoff.recordHeld(owner: "worker-1", until: 1_099)
        #expect(handoff.ticket(now: 1_000) == nil)
        handoff.recordHeld(owner: "worker-1", until: 6_000)
        let ticket = try #require(handoff.ticket(now: 1_000))
        #expect(ticket == DirectRelay(owner: "worker-1", seq: 1))

        // Handed over in memory: the worker takes it; no claim is asked for, even once the queue is empty.
        #expect(handoff.handOff(try Self.message(storedWith: ticket), ticket: ticket))
        #expect(await handoff.wait(timeout: .seconds(1)))
        #expect(handoff.take(.max).count == 1)
        #expect(!handoff.takeStoredWithoutLease())

        // Stored without a lease (a paused relay, a long queue): the worker is woken and asked to claim, once.
        handoff.notify()
        #expect(await handoff.wait(timeout: .seconds(1)))
        #expect(handoff.takeStoredWithoutLease())
        #expect(!handoff.takeStoredWithoutLease())

        // Past the limit, new messages get no ticket.
        handoff.setBacklog(4)
        #expect(handoff.ticket(now: 2_000) == nil)
    }

    @Test func theProgressNeverPassesATicketNotYetDoneWith() throws {
        let handoff = OutboxHandoff()
        #expect(handoff.progress(now: 500) == nil)
        handoff.open(owner: "w", limit: 16)
        handoff.recordHeld(owner: "w", until: .max)
        let tickets = (0..<5).compactMap { handoff.ticket(now: 1_000 + Int64($0)) }
        #expect(tickets.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(handoff.progress(now: 2_000)! == ("w", 0, 1_000))

        // Sent out of order: the record waits for the first.
        handoff.handOff(try Self.message(storedWith: tickets[1]), ticket: tickets[1])
        handoff.done([2], owner: "w")
        #expect(handoff.progress(now: 2_000)! == ("w", 0, 1_000))
        handoff.handOff(try Self.message(storedWith: tickets[0]), ticket: tickets[0])
        handoff.done([1], owner: "w")
        #expect(handoff.progress(now: 2_000)! == ("w", 2, 1_002))

        // An earlier request's message came back for the same Idempotency-Key: the ticket is not used.
        // It is claimed, like any message stored without this worker's ticket.
        #expect(!handoff.handOff(try Self.message(storedWith: DirectRelay(owner: "w", seq: 99)), ticket: tickets[2]))
        #expect(handoff.takeStoredWithoutLease())
        #expect(handoff.progress(now: 2_000)! == ("w", 3, 1_003))
        #expect(handoff.take(.max).count == 2)

        // An insert whose outcome is unknown holds the record until the worker handed the message back.
        handoff.unsettled(tickets[3])
        handoff.notStored(tickets[4])
        #expect(handoff.progress(now: 2_000)! == ("w", 3, 1_003))
        let unsettled = handoff.takeUnsettled()
        #expect(unsettled.map(\.ticket) == [tickets[3]] && unsettled.first?.at == 1_003)
        handoff.done([4], owner: "w")
        #expect(handoff.progress(now: 2_000)! == ("w", 5, 2_000))

        // A ticket of a record the worker no longer writes changes nothing.
        handoff.open(owner: "w2", limit: 16)
        handoff.recordHeld(owner: "w2", until: .max)
        let next = try #require(handoff.ticket(now: 3_000))
        handoff.done([1], owner: "w")
        #expect(next == DirectRelay(owner: "w2", seq: 1) && handoff.progress(now: 3_500)! == ("w2", 0, 3_000))
    }
}

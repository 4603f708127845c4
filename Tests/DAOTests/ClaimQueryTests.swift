@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// The claims of the relay's workers, made many times a second by every replica: each reads what is due through its
/// index, never the whole collection (a scan of every message on each claim grew with the archive, and was most of
/// the database's work in a long-running hub).
@Suite("Claim queries")
struct ClaimQueryTests {
    /// How many documents the server examines to answer `filter` sorted by `sort` on `collection`.
    static func examined(
        _ filter: BSONDocument, sort: BSONDocument, on collection: String,
        in database: MongoDatabase
    ) async throws -> Int64 {
        let plan = try await database.runCommand([
            "explain": [
                "find": .string(collection), "filter": .document(filter), "sort": .document(sort), "limit": 64,
            ],
            "verbosity": "executionStats",
        ])
        return try #require(plan[path: "executionStats.totalDocsExamined"]?.int64Value)
    }

    @Test func theOutboxAndWebhookClaimsReadOnlyWhatIsPending() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let now: Int64 = 1_800_000_000_000
            let messages = database.collection(CollectionName.message)
            _ = try await messages.insertMany(
                (0..<300).map { index in
                    [
                        "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                        "timestamp": .int64(now - Int64(index)),
                        "relay": ["state": "sent", "due_at": .int64(now - Int64(index))],
                    ]
                } + [
                    [
                        "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "timestamp": .int64(now),
                        "relay": ["state": "pending", "due_at": .int64(now - 5), "lease_until": .int64(now + 1_000)],
                    ]
                ])
            #expect(
                try await Self.examined(
                    OutboxDAO.due(now: now), sort: ["relay.due_at": 1],
                    on: CollectionName.message, in: database) <= 1)
            // The one pending message is leased: nothing to claim, and nothing waits for a worker.
            #expect(
                try await OutboxDAO(database: database).claim(owner: "test", now: now, leaseMS: 1_000, limit: 8) == nil)
            #expect(try await OutboxDAO(database: database).oldestWaitingDueAt(now: now) == nil)
            #expect(try await OutboxDAO(database: database).oldestWaitingDueAt(now: now + 2_000) == now - 5)

            let deliveries = database.collection(CollectionName.webhookDeliveries)
            _ = try await deliveries.insertMany(
                (0..<300).map { index in
                    ["_id": .objectID(ObjectID()), "state": "delivered", "due_at": .int64(now - Int64(index))]
                } + [["_id": .objectID(ObjectID()), "state": "pending", "due_at": .int64(now - 5)]])
            #expect(
                try await Self.examined(
                    WebhookDeliveryDAO.due(now: now), sort: ["due_at": 1],
                    on: CollectionName.webhookDeliveries, in: database) <= 1)
        }
    }

    /// The reminder worker looks ahead as far as it would sleep: what falls due by then, not every event to come.
    @Test func theReminderWorkersLookAheadReadsWhatFallsDueSoonAlone() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let now: Int64 = 1_800_000_000_000
            let events = database.collection(CollectionName.events)
            _ = try await events.insertMany(
                (0..<300).map { index in
                    ["_id": .objectID(ObjectID()), "due_at": .int64(now + 86_400_000 + Int64(index))]
                } + [["_id": .objectID(ObjectID()), "due_at": .int64(now + 400)]])
            #expect(
                try await Self.examined(
                    EventDAO.due(now: now + 1_000), sort: ["due_at": 1], on: CollectionName.events, in: database)
                    <= 1)
            let dao = EventDAO(database: database)
            #expect(try await dao.nextDue(by: now + 1_000) == now + 400)
            #expect(try await dao.nextDue(by: now + 399) == nil)
        }
    }

    /// The escalations' claim reads its queue's entries, then their messages alone; a hub that ran on the archive's
    /// queue indexes gets its entries written from them at start, and the indexes dropped.
    @Test func theEscalationsClaimReadsItsQueueAndTheArchiveIndexesAreMovedAndRetired() async throws {
        try await TestDatabase.with { database in
            let messages = database.collection(CollectionName.message)
            // A hub that ran the earlier versions: its first index, and the partial indexes the queues ran on.
            try await messages.createIndexes([
                IndexModel(
                    keys: ["ack.next_at": 1], name: "ack.next_at",
                    partialFilter: ["ack.next_at": ["$exists": true]]),
                IndexModel(
                    keys: ["ack.next_at": 1], name: "ack.next_at.due", partialFilter: ["ack.next_at": ["$gt": 0]]),
                IndexModel(
                    keys: ["approval.requested_at": 1], name: "approval.awaiting",
                    partialFilter: ["relay.state": "awaiting_approval"]),
            ])
            let now: Int64 = 1_800_000_000_000
            _ = try await messages.insertMany(
                (0..<300).map { index in
                    [
                        "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                        "timestamp": .int64(now - Int64(index)),
                    ]
                })
            let due: BSONDocument = [
                "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                "ack": ["next_at": .int64(now - 10)],
            ]
            let held: BSONDocument = [
                "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                "relay": ["state": "awaiting_approval"],
                "approval": ["state": "awaiting", "requested_at": .int64(now - 5), "expires_at": .int64(now + 60_000)],
            ]
            _ = try await messages.insertMany([
                due,
                [
                    "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()),
                    "ack": ["next_at": .int64(now + 60_000)],
                ],
                held,
            ])
            try await DatabaseIndexes.ensure(in: database)
            let listed = try await database.runCommand(["listIndexes": .string(CollectionName.message)])
            let names = Set(
                (listed[path: "cursor.firstBatch"]?.arrayValue ?? []).compactMap {
                    $0.documentValue?["name"]?.stringValue
                })
            #expect(names.isDisjoint(with: ["ack.next_at", "ack.next_at.due", "approval.awaiting"]), "\(names)")
            let queues = MessageQueueDAO(database: database)
            #expect(try await queues.members(of: .escalation).count == 2)
            #expect(try await queues.members(of: .approval) == [held["msi_key"]!])
            let listedHeld = try await ApprovalDAO(database: database).awaiting(now: now)
            #expect(listedHeld.map(\.msiKey) == [held["msi_key"]!.objectIDValue!])

            let claimFilter = try #require(
                try await queues.filter(["ack.next_at": AcknowledgementDAO.due(now)], in: .escalation))
            // The server finds the queue's messages by their `msi_key`s (its `explain` models a filter of several
            // fields as a scan, though it runs it on the first field's index: the cost tier times that at 20,000).
            #expect(claimFilter.elements.first?.key == "msi_key")
            let examined = try await Self.examined(
                ["msi_key": claimFilter["msi_key"]!], sort: [:], on: CollectionName.message, in: database)
            #expect(examined <= 2, "the claim examined \(examined) documents")

            let claimed = try await AcknowledgementDAO(database: database, now: { now }).claim(
                owner: "test", leaseMS: 1_000)
            #expect(claimed == nil)  // not an escalation this hub can read: taken off the queue
            #expect(try await messages.findOne(["_id": due["_id"]!])?[path: "ack.next_at"] == nil)
            #expect(try await queues.members(of: .escalation).count == 1)
        }
    }
}

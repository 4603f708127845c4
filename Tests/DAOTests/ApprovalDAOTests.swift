@testable import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Approvals in the database")
struct ApprovalDAOTests {
    /// A message held for approval as a hub stored it before texts had versions: no `approval.version`.
    static func heldWithoutVersion(in database: MongoDatabase, now: Int64) async throws -> ObjectID {
        let key = ObjectID()
        var approval = ApprovalDAO.request(
            by: "ann", author: "ann", at: now, expiresAt: now + 60_000, reasons: ["forced"])
        approval["version"] = nil
        try await database.collection(CollectionName.message).insertOne([
            "_id": .objectID(ObjectID()), "msi_key": .objectID(key), "title": "Held", "desc": "", "message": "",
            "relay": ["state": .string(RelayStatus.awaitingApproval.rawValue), "attempts": 0],
            "approval": .document(approval),
        ])
        return key
    }

    @Test func aRequestStoredBeforeVersionsIsVersionOneAndNoOther() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let approvals = ApprovalDAO(database: database)
            let now = UnixTime.nowMilliseconds()
            let key = try await Self.heldWithoutVersion(in: database, now: now)
            #expect(
                try await approvals.approve(key, version: 2, by: "bob", now: now, dueAt: now, deadlineAt: now) == nil)
            let approved = try await approvals.approve(
                key, version: 1, by: "bob", now: now, dueAt: now, deadlineAt: now)
            #expect(approved?.msiKey == key)
            let stored = try await database.collection(CollectionName.message).findOne(["msi_key": .objectID(key)])
            #expect(stored?[path: "approval.state"]?.stringValue == "approved")
        }
    }

    /// Each queue's writers: a held or overridden message enters its queue at its insert, a correction waiting at its
    /// request; each leaves it at the write that decides it, and the lists read the queues.
    @Test func heldOverriddenAndCorrectedMessagesEnterTheirQueuesAndLeaveThemWhenDecided() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let now = UnixTime.nowMilliseconds()
            let messages = MessageDAO(database: database)
            let approvals = ApprovalDAO(database: database)
            let queues = MessageQueueDAO(database: database)
            func stored(_ fields: BSONDocument) async throws -> Message {
                var document: BSONDocument = [
                    "_id": .objectID(ObjectID()), "msi_key": .objectID(ObjectID()), "title": "T", "desc": "",
                    "message": "", "topic_key": "a-b-c", "timestamp": .int64(now),
                ]
                for element in fields { document[element.key] = element.value }
                return try await messages.add(document: document)
            }
            let held = try await stored([
                "relay": ["state": .string(RelayStatus.awaitingApproval.rawValue), "attempts": 0],
                "approval": .document(
                    ApprovalDAO.request(by: "ann", author: "ann", at: now, expiresAt: now + 60_000, reasons: ["x"])),
            ])
            let overridden = try await stored([
                "relay": ["state": "pending", "attempts": 0],
                "override": .document(ApprovalDAO.override(by: "root", reason: "storm", at: now)),
            ])
            _ = try await stored(["relay": ["state": "pending", "attempts": 0]])
            #expect(try await queues.members(of: .approval) == [.objectID(held.msiKey)])
            #expect(try await queues.members(of: .override) == [.objectID(overridden.msiKey)])
            #expect(try await approvals.awaiting(now: now).map(\.msiKey) == [held.msiKey])
            #expect(try await approvals.overridesToReview().map(\.msiKey) == [overridden.msiKey])

            // Approved: out of its queue; its correction waits in the corrections' queue until rejected.
            #expect(
                try await approvals.approve(held.msiKey, version: 1, by: "bob", now: now, dueAt: now, deadlineAt: now)
                    != nil)
            #expect(try await queues.members(of: .approval).isEmpty)
            #expect(
                try await approvals.requestCorrection(
                    held.msiKey, expectedVersion: 1, correction: ["title": "T2"], by: "ann", author: "ann", now: now,
                    expiresAt: now + 60_000))
            #expect(try await approvals.correctionsAwaiting(now: now).map(\.msiKey) == [held.msiKey])
            #expect(
                try await approvals.rejectCorrection(held.msiKey, version: 2, by: "bob", reason: "no", now: now))
            #expect(try await queues.members(of: .correction).isEmpty)
            #expect(try await approvals.correctionsAwaiting(now: now).isEmpty)

            // Reviewed: out of the overrides' queue and list.
            #expect(try await approvals.markReviewed(overridden.msiKey, by: "root", now: now))
            #expect(try await queues.members(of: .override).isEmpty)
            #expect(try await approvals.overridesToReview().isEmpty)
        }
    }
}

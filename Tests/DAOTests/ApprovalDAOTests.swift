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
}

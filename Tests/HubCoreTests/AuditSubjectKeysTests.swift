import DAO
@testable import HubCore
import Mongo
import MongoTestSupport
import Testing

/// How the audit log names persons, users and devices (`AuditSubjectKeys`), on the real database: every place an
/// entry names one holds its pseudonym, the clear id opens again while its key exists and reads "erased …" once the
/// key is deleted, a seal moved to another pseudonym does not open, and two replicas naming a new person at once
/// share one key.
@Suite("Audit: pseudonyms and sealed ids")
struct AuditSubjectKeysTests {
    static func draft(actor: AuditActor, target: AuditTarget, change: BSONDocument?) -> AuditLog.Draft {
        AuditLog.Draft(at: 1, actor: actor, action: "test", target: target, change: change)
    }

    @Test func everyNameInAnEntryIsAPseudonymThatOpensUntilItsKeyIsDeleted() async throws {
        try await TestDatabase.with { database in
            let keys = AuditSubjectKeys(
                pseudonyms: AuditPseudonyms(key: String(repeating: "k", count: 32), database: database),
                database: database)
            let change: BSONDocument = [
                "after": [
                    "to": ["persons": ["ann", "ben"], "except": ["persons": ["cem"]], "groups": ["chess"]],
                    "managers": ["dora"], "title": "Trip",
                ]
            ]
            let draft = Self.draft(
                actor: AuditActor(kind: .device, name: "6b0c397aadc86bf6d7040f9a"),
                target: AuditTarget(kind: "person", id: "ann"), change: change)
            let stored = try await keys.pseudonymize(draft)
            // Ann (twice: target and recipient) is one subject; the group and the title stay as they are.
            #expect(stored.subjects.count == 5)
            #expect(Set(stored.subjects.map(\.kind)) == [.device, .person])
            #expect(stored.subjects.allSatisfy { $0.pseudonym.count == 64 && $0.sealed != nil })
            let text = stored.change?.extendedJSON(.relaxed) ?? ""
            for name in ["ann", "ben", "cem", "dora"] { #expect(!text.contains("\"\(name)\"")) }
            #expect(text.contains("chess") && text.contains("Trip"))
            #expect(stored.actor.name.count == 64 && stored.target.id.count == 64)
            #expect(stored.target.id == (try await keys.pseudonyms.pseudonym(of: "ann")))
            #expect(try await database.collection(CollectionName.auditKeys).countDocuments() == 5)

            func entry(_ draft: AuditLog.Draft) -> AuditEntry {
                AuditEntry(
                    seq: 1, at: draft.at, actor: draft.actor, action: draft.action, target: draft.target,
                    change: draft.change, subjects: draft.subjects, prev: AuditEntry.genesis)
            }
            let shown = try #require(try await keys.reveal([entry(stored)]).first)
            #expect(shown.actor.name == "6b0c397aadc86bf6d7040f9a" && shown.target.id == "ann")
            #expect(shown.change?[path: "after.to.persons"] == ["ann", "ben"])
            #expect(shown.change?[path: "after.to.except.persons"] == ["cem"])
            #expect(shown.change?[path: "after.managers"] == ["dora"])

            // Ben erased: his key is gone, the others still open.
            #expect(try await keys.forget([try await keys.pseudonyms.pseudonym(of: "ben")]) == 1)
            let after = try #require(try await keys.reveal([entry(stored)]).first)
            #expect(after.change?[path: "after.to.persons"] == ["ann", "erased person"])
            #expect(after.target.id == "ann")

            // A seal moved onto another subject's pseudonym does not open (it is bound to its own).
            // (The subjects in order: the device, Ann, Ben, Cem, Dora; Cem's seal put on Ann's place.)
            var moved = stored
            #expect(moved.subjects[1].pseudonym == stored.target.id)
            moved.subjects[1].sealed = stored.subjects[3].sealed
            let forged = try #require(try await keys.reveal([entry(moved)]).first)
            #expect(forged.target.id == "erased person")
            #expect(forged.change?[path: "after.to.except.persons"] == ["cem"])
        }
    }

    @Test func twoReplicasNamingANewPersonAtOnceShareOneKey() async throws {
        try await TestDatabase.with { database in
            let secret = String(repeating: "s", count: 32)
            let replicas = (0..<2).map { _ in
                AuditSubjectKeys(pseudonyms: AuditPseudonyms(key: secret, database: database), database: database)
            }
            let drafts = try await withThrowingTaskGroup(of: AuditLog.Draft.self) { group in
                for replica in replicas {
                    group.addTask {
                        try await replica.pseudonymize(
                            Self.draft(actor: .system, target: AuditTarget(kind: "person", id: "eve"), change: nil))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(try await database.collection(CollectionName.auditKeys).countDocuments() == 1)
            for (draft, replica) in zip(drafts, replicas.reversed()) {
                let entry = AuditEntry(
                    seq: 1, at: 1, actor: draft.actor, action: "test", target: draft.target, change: nil,
                    subjects: draft.subjects, prev: AuditEntry.genesis)
                // Each replica's seal opens with the one stored key, read by the other replica.
                #expect(try await replica.reveal([entry]).first?.target.id == "eve")
            }
            // Without AUDIT_PSEUDONYM_KEY, replicas asking at once for the key the hub keeps get the same one.
            let kept = (0..<8).map { _ in AuditPseudonyms(key: nil, database: database) }
            let pseudonyms = try await withThrowingTaskGroup(of: String.self) { group in
                for replica in kept { group.addTask { try await replica.pseudonym(of: "eve") } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(pseudonyms.count == 1 && pseudonyms.first?.count == 64)
            // Token and system actors, and other targets, are not persons: nothing to name by pseudonym.
            let plain = try await replicas[0].pseudonymize(
                Self.draft(
                    actor: AuditActor(kind: .token, name: "roster-bot"), target: AuditTarget(kind: "group", id: "g"),
                    change: ["name": "Chess"]))
            #expect(plain.subjects.isEmpty && plain.actor.name == "roster-bot" && plain.target.id == "g")
        }
    }
}

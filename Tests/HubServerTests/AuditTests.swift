import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import Logging
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The audit log through the real hub: what the routes and the portal change leaves its entry (never a secret), the
/// chain verifies and names the entry someone edited or deleted, two replicas appending at once keep one chain, and
/// `msi-hub audit verify` says so with its exit status.
@Suite struct AuditTests {
    /// Every entry as the log's readers see it (`AuditReading`), by `seq`.
    static func entries(_ database: MongoDatabase) async throws -> [BSONDocument] {
        try await AuditReading.entries(database)
    }

    /// Every entry as stored, by `seq`.
    static func storedEntries(_ database: MongoDatabase) async throws -> [BSONDocument] {
        try await database.collection(CollectionName.audit).find([:], options: FindOptions(sort: ["seq": 1]))
    }

    /// The first entry with `action`.
    static func entry(_ entries: [BSONDocument], _ action: String) -> BSONDocument? {
        entries.first { $0["action"]?.stringValue == action }
    }

    @Test func actionsThroughTheRoutesAndThePortalLeaveTheirEntriesWithoutSecrets() async throws {
        var webhooks = WebhookConfiguration()
        webhooks.policy = try WebhookAddressPolicy(parsing: "127.0.0.1/32")
        try await HubHarness.with(seed: PortalTests.seed, webhooks: webhooks) { hub in
            let channel = try await hub.request(
                .post, "/channel", as: .admin, json: #"{"name": "Staff", "desc": "News"}"#)
            #expect(channel.status == .created)
            let channelID = try #require(try channel.json()["_id"]?.stringValue)
            let group = try await hub.request(
                .put, "/group/class-7b", as: .admin,
                json: #"{"name": "7B", "members": ["p1", "p2"], "access": ["ann"]}"#)
            #expect(group.status == .created)
            let webhook = try await hub.request(
                .post, "/webhook", as: .admin,
                json: #"{"url": "http://127.0.0.1:9/hook", "events": ["message.sent"]}"#)
            #expect(webhook.status == .created, "\(webhook.text)")
            let webhookSecret = try #require(try webhook.json()["secret"]?.stringValue)
            let sent = try await hub.request(.post, "/message", as: .communicator, json: MessageRoutesTests.body())
            #expect(sent.status == .created)
            let msiKey = try #require(try sent.json()["msi_key"]?.stringValue)

            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let csrf = try PortalBrowser.csrf(in: try await root.get("/portal/admin/users"))
            let user = try await root.post(
                "/portal/admin/users", ["_csrf": csrf, "username": "dora", "role": "communicator"])
            #expect(user.status == .ok)
            let token = try await root.post(
                "/portal/admin/tokens", ["_csrf": csrf, "name": "roster-bot", "role": "communicator"])
            #expect(token.status == .ok)

            let entries = try await Self.entries(hub.database)
            let created = try #require(Self.entry(entries, "cube.channel.create"))
            #expect(created["actor"] == ["kind": "token", "name": "admin-script"])
            #expect(created["target"] == ["kind": "channel", "id": .string(channelID)])
            #expect(created["change"]?.documentValue?["after"]?.documentValue?["name"] == "Staff")
            let replaced = try #require(Self.entry(entries, "group.replace"))
            #expect(replaced["target"]?.documentValue?["id"] == "class-7b")
            #expect(replaced["change"]?.documentValue?["after"]?.documentValue?["members"]?.int64Value == 2)
            let hook = try #require(Self.entry(entries, "webhook.create"))
            #expect(hook["change"]?.documentValue?["after"]?.documentValue?["url"] == "http://127.0.0.1:9/hook")
            let send = try #require(Self.entry(entries, "message.send"))
            #expect(send["actor"] == ["kind": "token", "name": "bulletin-bot"])
            #expect(send["target"] == ["kind": "message", "id": .string(msiKey)])
            let sendChange = send["change"]?.documentValue?["after"]?.documentValue
            #expect(sendChange?["topic_key"] == .string(Legacy.hoursTopic) && sendChange?["title"] == "Library")
            #expect(sendChange?["desc"] == nil && sendChange?["message"] == nil)
            let dora = try #require(entries.first { $0["action"] == "user.create" && $0[path: "target.id"] == "dora" })
            #expect(dora["actor"] == ["kind": "user", "name": "root"])
            let bot = try #require(Self.entry(entries, "token.create"))
            #expect(bot["actor"] == ["kind": "user", "name": "root"] && bot[path: "target.id"] == "roster-bot")

            // No secret in any entry: the webhook's, the tokens' (stored as hashes), the password hashes.
            let text = entries.map { $0.extendedJSON(.relaxed) }.joined(separator: "\n")
            #expect(!text.contains(webhookSecret) && !text.contains("whsec_") && !text.contains("msi_"))
            let hashes =
                try await hub.database.collection(CollectionName.tokens).find([:]).compactMap {
                    $0["hash"]?.stringValue
                }
                + (try await hub.database.collection(CollectionName.users).find([:]).compactMap {
                    $0["password_hash"]?.stringValue ?? $0["hash"]?.stringValue
                })
            #expect(!hashes.isEmpty && hashes.allSatisfy { !text.contains($0) })
            #expect(!text.contains("$2"))
            // Each entry links to the one before and the chain verifies.
            #expect(entries.map { $0["seq"]?.int64Value } == (1...Int64(entries.count)).map { $0 })
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database)
            let head = try #require(try await Self.storedEntries(hub.database).last?["hash"]?.stringValue)
            #expect(try await services.audit.verify() == .intact(headSeq: Int64(entries.count), headHash: head))
        }
    }

    @Test func verifyNamesTheEntryEditedInTheDatabaseAndThenTheOneDeleted() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let audit = AuditLog(database: database)
            for index in 1...6 {
                try await audit.append(
                    actor: AuditActor(kind: .user, name: "ann"), action: "group.replace",
                    target: AuditTarget(kind: "group", id: "g\(index)"),
                    change: AuditChange.edit(before: ["name": "old"], after: ["name": .string("new \(index)")]))
            }
            guard case .intact(6, _) = try await audit.verify() else {
                Issue.record("a fresh chain must verify"); return
            }
            let collection = database.collection(CollectionName.audit)
            let original = try #require(try await collection.findOne(["seq": 3]))
            // Someone rewrites what entry 3 says was changed.
            _ = try await collection.updateOne(["seq": 3], ["$set": ["change.after.name": "innocent"]])
            #expect(try await audit.verify() == .broken(seq: 3, reason: .edited))
            // Recomputing its hash does not help: the next entry's link breaks.
            let edited = try #require(try await collection.findOne(["seq": 3]))
            var forged = try #require(AuditEntry(document: edited))
            forged.hash = AuditLog.hash(of: forged)
            _ = try await collection.updateOne(["seq": 3], ["$set": ["hash": .string(forged.hash)]])
            #expect(try await audit.verify() == .broken(seq: 4, reason: .brokenLink))
            // Put back, it verifies again; deleting entry 2 is named as a gap.
            _ = try await collection.deleteOne(["seq": 3])
            _ = try await collection.insertOne(original)
            guard case .intact(6, _) = try await audit.verify() else {
                Issue.record("the restored chain must verify"); return
            }
            _ = try await collection.deleteOne(["seq": 2])
            #expect(try await audit.verify() == .broken(seq: 2, reason: .deleted))
        }
    }

    @Test func theHeadIsLoggedAtOnceAndAgainEachIntervalSoACutTailIsSeenAgainstTheLogs() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let lines = HubLoggingTests.Lines()
            let logger = Logger(label: "msi-hub") { label in
                TextLogHandler(label: label, logLevel: .info, stream: lines.stream, metadataProvider: nil)
            }
            let audit = AuditLog(database: database, logger: logger)
            func append(_ id: String) async throws -> AuditEntry {
                try await audit.append(
                    actor: AuditActor(kind: .user, name: "ann"), action: "group.delete",
                    target: AuditTarget(kind: "group", id: id), change: nil)
            }
            let first = try await append("g1")
            let loop = Task { await audit.logHeadLoop(every: .milliseconds(50)) }
            defer { loop.cancel() }
            try await eventually { lines.all.contains { $0.hasSuffix("audit head seq=1 hash=\(first.hash)") } }
            let second = try await append("g2")
            try await eventually { lines.all.contains { $0.hasSuffix("audit head seq=2 hash=\(second.hash)") } }
            // Someone cuts the last entry off: the chain still verifies, but its head is behind the one logged.
            _ = try await database.collection(CollectionName.audit).deleteOne(["seq": 2])
            #expect(try await audit.verify() == .intact(headSeq: 1, headHash: first.hash))
            #expect(lines.all.contains { $0.contains("audit head seq=2") })
        }
    }

    @Test func aLogAppendsThroughItsOwnPoolWhenAnotherServersDatabaseHasTheSameName() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // Another server's database of the same name (here one nobody answers on) is made first: its log's
            // batches must not carry this one's entries.
            let elsewhere = try MongoClientPool(
                configuration: MongoConfiguration(
                    uri: "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200"))
            let other = AuditLog(database: elsewhere.database(database.name))
            let audit = AuditLog(database: database)
            #expect(other.gate !== audit.gate)
            let clock = ContinuousClock()
            let started = clock.now
            let entry = try await audit.append(
                actor: AuditActor(kind: .user, name: "ann"), action: "group.delete",
                target: AuditTarget(kind: "group", id: "g1"), change: nil)
            #expect(entry.seq == 1 && clock.now - started < .seconds(5))
            #expect(try await Self.entries(database).count == 1)
            #expect(AuditLog(database: database).gate === audit.gate)  // one gate per database in a process
        }
    }

    @Test func theHashIgnoresKeyOrderAndSecretsAreRedactedBeforeHashing() throws {
        let one = AuditEntry(
            seq: 1, at: 5, actor: .system, action: "user.create", target: AuditTarget(kind: "user", id: "a"),
            change: ["after": ["role": "admin", "direct": false]], prev: AuditEntry.genesis)
        var two = one
        two.change = ["after": ["direct": false, "role": "admin"]]
        #expect(AuditLog.hash(of: one) == AuditLog.hash(of: two))
        two.change = ["after": ["direct": true, "role": "admin"]]
        #expect(AuditLog.hash(of: one) != AuditLog.hash(of: two))
        let input: BSONDocument = [
            "after": [
                "password_hash": "$2b$04$abc", "note": "msi_secret", "url": "x",
                "registration": "fcm-token", "list": ["whsec_abc"],
            ]
        ]
        let redacted = AuditRedaction.redact(input)
        #expect(
            redacted == [
                "after": [
                    "password_hash": "[redacted]", "note": "[redacted]", "url": "x",
                    "registration": "[redacted]", "list": ["[redacted]"],
                ]
            ])
    }

    @Test func twoReplicasAppendingAtOnceKeepOneChain() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // Each with a gate of its own, as two processes have: only the database keeps them in one chain.
            let replicas = [
                AuditLog(database: database, gate: AuditAppendGate(database: database)),
                AuditLog(database: database, gate: AuditAppendGate(database: database)),
            ]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (number, replica) in replicas.enumerated() {
                    group.addTask {
                        for index in 0..<100 {
                            try await replica.append(
                                actor: AuditActor(kind: .system, name: "replica \(number)"),
                                action: "test.append", target: AuditTarget(kind: "test", id: "\(index)"),
                                change: nil)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let entries = try await Self.entries(database)
            #expect(entries.count == 200)
            #expect(entries.compactMap { $0["seq"]?.int64Value } == Array(1...200))
            #expect(Set(entries.compactMap { $0[path: "actor.name"]?.stringValue }) == ["replica 0", "replica 1"])
            guard case .intact(200, _) = try await replicas[0].verify() else {
                Issue.record("two replicas' appends must make one valid chain")
                return
            }
        }
    }

    @Test func manyAppendsAtOnceFromTwoReplicasAreBatchedIntoOneChainEachOnce() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let replicas = [
                AuditLog(database: database, gate: AuditAppendGate(database: database)),
                AuditLog(database: database, gate: AuditAppendGate(database: database)),
            ]
            // 150 requests of each process at once: they wait in their process's batches, and the batches of the two
            // race for the same places.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (number, replica) in replicas.enumerated() {
                    for index in 0..<150 {
                        group.addTask {
                            try await replica.append(
                                actor: AuditActor(kind: .system, name: "replica \(number)"),
                                action: "test.append", target: AuditTarget(kind: "test", id: "\(number)-\(index)"),
                                change: nil)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let entries = try await Self.entries(database)
            #expect(entries.compactMap { $0["seq"]?.int64Value } == Array(1...300))
            let targets = entries.compactMap { $0[path: "target.id"]?.stringValue }
            #expect(Set(targets).count == 300)  // every append once, none twice
            guard case .intact(300, _) = try await replicas[1].verify() else {
                Issue.record("batched appends of two replicas must make one valid chain")
                return
            }
        }
    }

    @Test func theCommandLineVerifiesWithItsExitStatusAndExportsJSONLines() async throws {
        try await HubHarness.with { hub in
            let uri = try HubProcess.uri(of: hub.database)
            _ = try await hub.request(.post, "/channel", as: .admin, json: #"{"name": "Staff", "desc": ""}"#)
            _ = try await hub.request(.post, "/channel", as: .admin, json: #"{"name": "Parents", "desc": ""}"#)
            let entries = try await Self.storedEntries(hub.database)
            let intact = try await CommandLineTests.run(["audit", "verify", "--mongodb-uri", uri], input: "")
            #expect(intact.status == 0, "\(intact.output)")
            #expect(
                intact.output.contains("head seq=\(entries.count) hash=\(entries.last?["hash"]?.stringValue ?? "-")"))
            let exported = try await CommandLineTests.run(
                [
                    "audit", "export", "--since", "1970-01-01T00:00:00Z",
                    "--mongodb-uri", uri,
                ], input: "")
            #expect(exported.status == 0)
            let lines = exported.output.split(separator: "\n").filter { $0.hasPrefix("{") }
            #expect(lines.count == entries.count && lines.last?.contains("cube.channel.create") == true)
            _ = try await hub.database.collection(CollectionName.audit)
                .updateOne(["action": "cube.channel.create"], ["$set": ["actor.name": "someone else"]])
            let broken = try await CommandLineTests.run(["audit", "verify", "--mongodb-uri", uri], input: "")
            #expect(broken.status == 1)
            #expect(broken.output.contains("broken at seq=") && broken.output.contains("edited"))
        }
    }

    @Test func theAdminsAuditPageFiltersAndPagesAndIsForAdminsOnly() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            for name in ["Staff", "Parents", "Pupils"] {
                _ = try await hub.request(.post, "/channel", as: .admin, json: #"{"name": "\#(name)", "desc": ""}"#)
            }
            _ = try await hub.request(.put, "/group/club", as: .admin, json: #"{"name": "Club", "members": ["p1"]}"#)
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let all = try await root.get("/portal/admin/audit")
            #expect(all.status == .ok)
            #expect(all.text.contains("cube.channel.create") && all.text.contains("group.replace"))
            let cube = try await root.get("/portal/admin/audit?action=cube.&actor=admin-script")
            #expect(cube.text.contains("cube.channel.create") && !cube.text.contains("group.replace"))
            #expect(cube.text.components(separatedBy: "data-seq=").count - 1 == 3)
            let none = try await root.get("/portal/admin/audit?actor=nobody")
            #expect(none.text.contains("No entries"))
            #expect(try await root.get("/portal/admin/audit?since=yesterday-ish").status == .unprocessableContent)
            #expect(try await root.get("/portal/admin/audit?since=2000-01-01").text.contains("group.replace"))

            var ann = PortalBrowser(hub: hub)
            _ = try await ann.login("ann", HubHarness.annPassword)
            #expect(try await ann.get("/portal/admin/audit").status == .forbidden)

            // A person the log names is shown by name, found by name, while their key exists; "erased person" after
            // their erasure, and the chain still verifies.
            #expect(try await hub.request(.put, "/group/club/members/pupil-42", as: .admin).status == .created)
            let named = try await root.get("/portal/admin/audit?action=group.member")
            #expect(named.text.contains("pupil-42") && !named.text.contains("erased person"))
            let found = try await root.get("/portal/admin/audit?target=pupil-42")
            #expect(found.status == .ok && !found.text.contains("No entries"))
            let stored = try await Self.storedEntries(hub.database)
            #expect(!stored.map { $0.extendedJSON(.relaxed) }.joined().contains("pupil-42"), "stored by pseudonym")
            #expect(try await hub.request(.delete, "/person/pupil-42", as: .admin).status == .accepted)
            let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database, bcryptCost: 4)
            _ = try await services.personData.runDueErasures()
            let erased = try await root.get("/portal/admin/audit?action=group.member")
            #expect(erased.text.contains("erased person") && !erased.text.contains("pupil-42"))
            #expect(try await root.get("/portal/admin/audit?action=person.erase").text.contains("erased person"))
            guard case .intact = try await services.audit.verify() else {
                Issue.record("an erasure must leave the chain intact")
                return
            }
        }
    }

    @Test func aLoginRefusedPastTheThrottleIsRecordedOnceAMinutePerAddressAndFailuresBeforeItAreNot() async throws {
        try await HubHarness.with { hub in
            var statuses: [Int] = []
            for _ in 0..<7 {
                statuses.append(
                    try await hub.request(.get, "/webhook", as: .basic("ann", "not-the-password")).status.code)
            }
            #expect(statuses.prefix(5).allSatisfy { $0 == 401 } && statuses.suffix(2).allSatisfy { $0 == 429 })
            let throttled = try await Self.entries(hub.database).filter { $0["action"] == "login.throttled" }
            // Two refusals from one address within the minute: one entry, so that hammering cannot flood the chain.
            #expect(throttled.count == 1)
            #expect(throttled.first?["target"] == ["kind": "user", "id": "ann"])
            #expect(throttled.first?["actor"]?.documentValue?["kind"] == "system")
            #expect(throttled.first.map { !$0.extendedJSON(.relaxed).contains("not-the-password") } == true)
        }
    }

    @Test func pagesOfTheLogWalkEveryEntryOnceNewestFirst() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let audit = AuditLog(database: database)
            for index in 1...7 {
                try await audit.append(
                    actor: .system, action: index.isMultiple(of: 2) ? "user.role" : "token.create",
                    target: AuditTarget(kind: "user", id: "u\(index)"), change: nil)
            }
            var seen: [Int64] = []
            var before: Int64?
            repeat {
                let page = try await audit.entries(AuditFilter(actionPrefix: "token."), before: before, limit: 2)
                seen += page.entries.map(\.seq)
                before = page.next
            } while before != nil
            #expect(seen == [7, 5, 3, 1])
        }
    }
}

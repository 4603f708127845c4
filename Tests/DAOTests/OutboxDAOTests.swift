import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("The relay outbox")
struct OutboxDAOTests {
    static let now: Int64 = 1_800_000_000_000

    /// Stores `count` pending messages due at `now` (or later ones when `dueIn` is given).
    func seed(_ database: MongoDatabase, count: Int, distribution: Distribution = .alert, dueIn: Int64 = 0) async throws
        -> [Message]
    {
        let messages = MessageDAO(database: database, now: { Self.now })
        var added: [Message] = []
        for index in 0..<count {
            let plan = RelayPlan(dueAt: Self.now + dueIn, deadlineAt: Self.now + 3_600_000)
            added.append(
                try await messages.add(
                    MessageDraft(
                        title: "t\(index)", desc: "d", message: "m", topicKey: "a-b-c", distribution: distribution,
                        sender: "ann",
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
                        while let batch = try await outbox.claim(
                            owner: "w\(worker)", now: Self.now, leaseMS: 60_000, limit: 4)
                        {
                            claimed += batch.messages.map(\.id)
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

    @Test func aSliceOfABacklogClaimsOnlyWhatIsDueWithinItAndNotLeased() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            // Due 10 s ago, 5 s ago, now, and in a minute.
            let old = try await seed(database, count: 3, dueIn: -10_000)
            let middle = try await seed(database, count: 3, dueIn: -5_000)
            _ = try await seed(database, count: 2)
            _ = try await seed(database, count: 2, dueIn: 60_000)
            let outbox = OutboxDAO(database: database)
            // Another worker holds one of the middle ones.
            let other = try #require(
                try await outbox.claim(
                    owner: "other", now: Self.now, leaseMS: 60_000, limit: 1,
                    due: (Self.now - 6_000)...(Self.now - 4_000)))
            #expect(other.messages.map(\.id) == [middle[0].id])
            let slice = try #require(
                try await outbox.claim(
                    owner: "w", now: Self.now, leaseMS: 60_000, limit: 64,
                    due: (Self.now - 6_000)...(Self.now - 4_000)))
            #expect(Set(slice.messages.map(\.id)) == Set(middle.dropFirst().map(\.id)))
            #expect(slice.messages.allSatisfy { $0.dueAt == Self.now - 5_000 })
            // The slice is spent; one past `now` finds nothing not yet due.
            #expect(
                try await outbox.claim(
                    owner: "w", now: Self.now, leaseMS: 60_000, limit: 64,
                    due: (Self.now - 6_000)...(Self.now - 4_000)) == nil)
            #expect(
                try await outbox.claim(
                    owner: "w", now: Self.now, leaseMS: 60_000, limit: 64,
                    due: (Self.now + 1)...(Self.now + 120_000)) == nil)
            // The whole outbox still gives the oldest first.
            let rest = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 3))
            #expect(Set(rest.messages.map(\.id)) == Set(old.map(\.id)))
        }
    }

    @Test func oneClaimLeasesManyAndOneWriteRecordsThemAll() async throws {
        try await TestDatabase.with { database in
            let seeded = try await seed(database, count: 10, distribution: .information)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 64))
            #expect(Set(batch.messages.map(\.id)) == Set(seeded.map(\.id)))
            #expect(batch.messages.allSatisfy { RelayState(message: $0.document)?.attempts == 1 })
            #expect(try await outbox.claim(owner: "w2", now: Self.now, leaseMS: 60_000, limit: 64) == nil)
            let outcomes = batch.messages.map {
                RelayOutcome(id: $0.id, status: .sent, components: [.data: .sent(name: "projects/p/messages/\($0.id)")])
            }
            #expect(try await outbox.record(outcomes, lease: batch.lease, now: Self.now) == 10)
            let stored = try await database.collection(CollectionName.message).find(["relay.state": "sent"])
            #expect(stored.count == 10)
            #expect(stored.allSatisfy { $0[path: "relay.lease_owner"] == nil && RelayState(message: $0)?.unsent == [] })
        }
    }

    @Test func aWithdrawalOfAClaimedMessageLeavesItsLeaseAndItsOutcomeThenLeavesItPendingForTheNotice() async throws {
        try await TestDatabase.with { database in
            let seeded = try await seed(database, count: 2)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 2))
            let edited = seeded[0], other = seeded[1]
            let expected = try #require(RelayState(message: batch.messages.first { $0.id == edited.id }!.document))
            // Withdrawn while the worker holds it: its relay and lease stay, its notice waits, `relay.edit` moves on.
            let notice = RelayNotice(
                component: .withdrawal, dueAt: Self.now + 5, deadlineAt: Self.now + 3_600_000,
                handover: .live)
            #expect(
                try await MessageDAO(database: database).withdraw(
                    msiKey: edited.msiKey, expected: expected, at: Self.now + 5, by: "ann", reason: nil, cancel: false,
                    notice: notice))
            var stored = try #require(try await outbox.message(edited.id))
            var state = try #require(RelayState(message: stored.document))
            #expect(state.status == .pending && state.lease?.owner == batch.lease && state.edit == 1)
            #expect(state.unsent.contains(.withdrawal))
            #expect(try await outbox.edits(of: [edited.id, other.id]) == [edited.id: 1])
            // The worker, which read edit 0, sends both: the edited one stays pending, due at the write.
            let written = try await outbox.record(
                [
                    RelayOutcome(id: edited.id, status: .sent, edit: 0),
                    RelayOutcome(id: other.id, status: .sent, edit: 0),
                ], lease: batch.lease, now: Self.now + 10)
            #expect(written == 2)
            stored = try #require(try await outbox.message(edited.id))
            state = try #require(RelayState(message: stored.document))
            #expect(state.status == .pending && state.dueAt == Self.now + 10 && state.lease == nil)
            let sentOther = try #require(try await outbox.message(other.id))
            #expect(RelayState(message: sentOther.document)?.status == .sent)
            // A worker that read the edit sends its notice and the rest skipped: sent.
            let again = try #require(try await outbox.claim(owner: "w2", now: Self.now + 10, leaseMS: 60_000, limit: 2))
            #expect(again.messages.map(\.id) == [edited.id])
            _ = try await outbox.record(
                [
                    RelayOutcome(
                        id: edited.id, status: .sent,
                        components: [.notification: .skipped, .data: .skipped],
                        edit: 1)
                ], lease: again.lease, now: Self.now + 20)
            stored = try #require(try await outbox.message(edited.id))
            state = try #require(RelayState(message: stored.document))
            #expect(state.status == .sent && state.isDone(.data) && state.components[.data]?.skipped == true)
        }
    }

    @Test func outcomesOfManyShapesShareStatementsYetEachMessageKeepsItsOwnValues() async throws {
        try await TestDatabase.with { database in
            _ = try await seed(database, count: 40)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 64))
            // Three shapes: both components sent, data sent and the notification refused for good, a retry whose
            // error starts with "$" (a pipeline must store it as text, not read it as a field).
            let outcomes = batch.messages.enumerated().map { index, message -> RelayOutcome in
                switch index % 3 {
                case 0:
                    return RelayOutcome(
                        id: message.id, status: .sent,
                        components: [
                            .notification: .sent(name: "projects/p/messages/n\(message.id)"),
                            .data: .sent(name: "projects/p/messages/d\(message.id)"),
                        ])
                case 1:
                    return RelayOutcome(
                        id: message.id, status: .sent,
                        components: [
                            .notification: .failed(error: "INVALID_ARGUMENT", permanent: true),
                            .data: .sent(name: "projects/p/messages/d\(message.id)"),
                        ])
                default:
                    return RelayOutcome(
                        id: message.id, status: .pending, retryAt: Self.now + Int64(index),
                        components: [.data: .failed(error: "$unavailable \(index)", permanent: false)],
                        lastError: "$unavailable \(index)")
                }
            }
            #expect(
                RelayUpdate.statements(outcomes.map { $0.update(lease: batch.lease, now: Self.now) }).count == 3,
                "40 messages of 3 shapes (14, 13 and 13): one statement each")
            #expect(try await outbox.record(outcomes, lease: batch.lease, now: Self.now) == 40)

            let stored = try await database.collection(CollectionName.message).find([:])
            let byID = Dictionary(
                uniqueKeysWithValues: stored.compactMap { document in
                    document["_id"]?.objectIDValue.map { ($0, document) }
                })
            for (index, message) in batch.messages.enumerated() {
                let document = try #require(byID[message.id])
                let state = try #require(RelayState(message: document))
                #expect(document[path: "relay.lease_owner"] == nil)
                switch index % 3 {
                case 0:
                    #expect(state.status == .sent && state.unsent.isEmpty)
                    #expect(state.components[.notification]?.name == "projects/p/messages/n\(message.id)")
                    #expect(state.components[.data]?.name == "projects/p/messages/d\(message.id)")
                case 1:
                    #expect(state.components[.notification]?.failed == true)
                    #expect(state.components[.data]?.name == "projects/p/messages/d\(message.id)")
                default:
                    #expect(state.status == .pending && state.dueAt == Self.now + Int64(index))
                    #expect(state.components[.data]?.lastError == "$unavailable \(index)")
                    #expect(state.components[.data]?.attempts == 1)
                }
            }
        }
    }

    @Test func anExpiredLeaseIsClaimedAgainAndTheOldLeaseCanNoLongerWrite() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            let crashed = try #require(
                try await outbox.claim(owner: "crashed", now: Self.now, leaseMS: 1_000, limit: 8))
            #expect(crashed.messages.map(\.id) == [message.id])
            #expect(try await outbox.claim(owner: "other", now: Self.now + 500, leaseMS: 1_000, limit: 8) == nil)
            let again = try #require(
                try await outbox.claim(owner: "other", now: Self.now + 1_001, leaseMS: 1_000, limit: 8))
            #expect(again.messages.map(\.id) == [message.id])
            let sentData = RelayOutcome(
                id: message.id, status: .pending, retryAt: Self.now + 2_000,
                components: [.data: .sent(name: "x")])
            #expect(try await outbox.record([sentData], lease: crashed.lease, now: Self.now) == 0)
            let done = RelayOutcome(
                id: message.id, status: .sent, components: [.data: .sent(name: "projects/p/messages/1")])
            #expect(try await outbox.record([done], lease: again.lease, now: Self.now) == 1)
            let stored = try #require(
                try await database.collection(CollectionName.message).findOne(["_id": .objectID(message.id)]))
            let state = try #require(RelayState(message: stored))
            #expect(state.status == .sent && state.attempts == 2)
            #expect(state.components[.data]?.name == "projects/p/messages/1")
            #expect(state.unsent == [.notification])
            #expect(stored[path: "relay.lease_owner"] == nil)
        }
    }

    @Test func anExtendedLeaseKeepsOthersOut() async throws {
        try await TestDatabase.with { database in
            _ = try await seed(database, count: 2)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "slow", now: Self.now, leaseMS: 1_000, limit: 8))
            #expect(try await outbox.extend(batch, until: Self.now + 5_000))
            #expect(try await outbox.claim(owner: "other", now: Self.now + 2_000, leaseMS: 1_000, limit: 8) == nil)
            #expect(
                try await outbox.claim(owner: "other", now: Self.now + 5_001, leaseMS: 1_000, limit: 8)?.messages.count
                    == 2)
            #expect(try await !outbox.extend(batch, until: Self.now + 9_000))
        }
    }

    @Test func retriesWaitUntilTheirDueTimeAndFailuresAreRecorded() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            let first = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 8))
            let retry = RelayOutcome(
                id: message.id, status: .pending, retryAt: Self.now + 5_000,
                components: [.notification: .failed(error: "UNAVAILABLE", permanent: false)],
                lastError: "UNAVAILABLE")
            #expect(try await outbox.record([retry], lease: first.lease, now: Self.now) == 1)
            #expect(try await outbox.claim(owner: "w", now: Self.now + 4_999, leaseMS: 60_000, limit: 8) == nil)
            #expect(try await outbox.backlog(now: Self.now + 5_000).count == 1)
            let second = try #require(
                try await outbox.claim(owner: "w", now: Self.now + 5_000, leaseMS: 60_000, limit: 8))
            #expect(second.messages.map(\.id) == [message.id])
            let refused = RelayOutcome(
                id: message.id, status: .failed,
                components: [
                    .notification: .failed(error: "INVALID_ARGUMENT", permanent: true),
                    .data: .sent(name: "projects/p/messages/2"),
                ],
                lastError: "INVALID_ARGUMENT")
            #expect(try await outbox.record([refused], lease: second.lease, now: Self.now + 5_000) == 1)
            let stored = try #require(try await database.collection(CollectionName.message).findOne([:]))
            let state = try #require(RelayState(message: stored))
            #expect(state.status == .failed)
            #expect(state.components[.notification]?.failed == true)
            #expect(state.components[.notification]?.attempts == 2)
            #expect(state.components[.notification]?.lastError == "INVALID_ARGUMENT")
            #expect(state.components[.data]?.sent == true)
            #expect(state.unsent == [])
        }
    }

    @Test func scheduledMessagesWaitForSendAt() async throws {
        try await TestDatabase.with { database in
            _ = try await seed(database, count: 2, dueIn: 60_000)
            let outbox = OutboxDAO(database: database)
            #expect(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 1_000, limit: 8) == nil)
            #expect(try await outbox.backlog(now: Self.now).count == 0)
            #expect(
                try await outbox.claim(owner: "w", now: Self.now + 60_000, leaseMS: 1_000, limit: 8)?.messages.count
                    == 2)
        }
    }

    @Test func aDirectMessageIsSentByItsRecordAndHandedBackOnlyPastItOnceTheRecordIsTakenOver() async throws {
        try await TestDatabase.with { database in
            let messages = MessageDAO(database: database, now: { Self.now })
            func store(_ direct: DirectRelay) async throws -> Message {
                let plan = RelayPlan(dueAt: Self.now, deadlineAt: Self.now + 3_600_000, direct: direct)
                return try await messages.add(
                    MessageDraft(
                        title: "t", desc: "d", message: "m", topicKey: "a-b-c", distribution: .information,
                        sender: "ann",
                        extra: ["relay": .document(plan.document(for: .information))]))
            }
            var stored: [Message] = []
            for seq in 1...3 { stored.append(try await store(DirectRelay(owner: "w/1", seq: Int64(seq)))) }
            let state = try #require(RelayState(message: stored[0].document))
            #expect(state.status == .direct && state.direct == DirectRelay(owner: "w/1", seq: 1) && state.attempts == 1)
            let outbox = OutboxDAO(database: database)
            let progress = RelayProgressDAO(database: database)
            // Never claimed while direct, however late.
            #expect(try await outbox.claim(owner: "other", now: Self.now + 60_000, leaseMS: 1_000, limit: 8) == nil)

            // The record says the first is done with: it shows as sent, the others as pending.
            #expect(
                try await progress.report(
                    owner: "w/1", through: 1, since: Self.now, until: Self.now + 1_000,
                    now: Self.now))
            let shown = try await progress.resolved(stored).map { RelayState(message: $0.document)?.status }
            #expect(shown == [.sent, .pending, .pending])
            #expect(try await outbox.count(.sent, progress: progress) == 1)
            #expect(try await outbox.count(.pending, progress: progress) == 2)

            // Alive until 1 s: not taken; after, taken once, and its owner can no longer report.
            #expect(try await progress.takeOverExpired(now: Self.now + 999).isEmpty)
            let taken = try await progress.takeOverExpired(now: Self.now + 1_001)
            #expect(taken.map(\.owner) == ["w/1"] && taken.first?.through == 1)
            #expect(taken.first?.takenAt == Self.now + 1_001)
            #expect(
                try await !progress.report(
                    owner: "w/1", through: 3, since: Self.now, until: Self.now + 9_000,
                    now: Self.now))
            #expect(try await progress.takeOverExpired(now: Self.now + 2_000).first?.takenAt == Self.now + 1_001)

            // Only the messages past `through` go back to the outbox, once.
            #expect(try await outbox.handBack(try #require(taken.first)) == 2)
            #expect(try await outbox.handBack(try #require(taken.first)) == 0)
            let claimed = try #require(
                try await outbox.claim(owner: "other", now: Self.now + 1_002, leaseMS: 1_000, limit: 8))
            #expect(Set(claimed.messages.map(\.id)) == Set(stored[1...].map(\.id)))
            try await progress.settle(owner: "w/1")
            #expect(try await progress.takeOverExpired(now: Self.now + 60_000).isEmpty)

            // A ticket whose insert's outcome was unknown: handed back when stored, nothing when not.
            let unsure = try await store(DirectRelay(owner: "w/2", seq: 1))
            #expect(try await outbox.handBack(owner: "w/2", seqs: [2], since: Self.now) == 0)
            #expect(try await outbox.handBack(owner: "w/2", seqs: [1, 2], since: Self.now) == 1)
            let again = try await outbox.claim(owner: "other", now: Self.now + 1_003, leaseMS: 1_000, limit: 8)
            #expect(again?.messages.map(\.id) == [unsure.id])
        }
    }

    @Test func aComponentsWriteAndTheOutcomeMergeIntoOneStatement() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(try await outbox.claim(owner: "w", now: Self.now, leaseMS: 60_000, limit: 8))
            var update = RelayUpdate(
                id: message.id, lease: batch.lease, component: .notification,
                result: .sent(name: "projects/p/messages/1"), at: Self.now)
            update.merge(
                RelayUpdate(
                    id: message.id, lease: batch.lease, component: .data,
                    result: .sent(name: "projects/p/messages/2"), at: Self.now + 5))
            update.merge(RelayOutcome(id: message.id, status: .sent).update(lease: batch.lease, now: Self.now + 6))
            #expect(update.endsLease)
            #expect(try await outbox.record([update]) == 1)
            let stored = try #require(try await database.collection(CollectionName.message).findOne([:]))
            let state = try #require(RelayState(message: stored))
            #expect(state.status == .sent && state.unsent == [] && state.lease == nil)
            #expect(state.components[.notification]?.name == "projects/p/messages/1")
            #expect(state.components[.data]?.attempts == 1)
        }
    }

    @Test func renewingStillHeldAndReleasingManyMessagesCoverEveryOneInBoundedCommands() async throws {
        try await TestDatabase.with { database in
            let messages = try await seed(database, count: 150, distribution: .information)
            let outbox = OutboxDAO(database: database)
            var leases: Set<String> = []
            var ids: [ObjectID] = []
            while let batch = try await outbox.claim(owner: "worker", now: Self.now, leaseMS: 1_000, limit: 64) {
                leases.insert(batch.lease)
                ids += batch.messages.map(\.id)
            }
            #expect(Set(ids) == Set(messages.map(\.id)))
            // More ids than one command names: every one is renewed, found held and released all the same.
            #expect(ids.count > 2 * OutboxDAO.idsPerCommand)
            #expect(try await outbox.renew(ids, leases: leases, until: Self.now + 60_000) == 150)
            #expect(try await outbox.claim(owner: "other", now: Self.now + 30_000, leaseMS: 1_000, limit: 64) == nil)
            #expect(try await outbox.stillHeld(ids, leases: leases) == Set(ids))
            try await outbox.release(ids, leases: leases)
            #expect(try await outbox.stillHeld(ids, leases: leases).isEmpty)
            let again = try #require(
                try await outbox.claim(owner: "other", now: Self.now + 1, leaseMS: 1_000, limit: 200))
            #expect(again.messages.count == 150)
        }
    }

    @Test func aReleasedMessageIsClaimableAtOnceAndRecordsNothing() async throws {
        try await TestDatabase.with { database in
            let message = try #require(try await seed(database, count: 1).first)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(
                try await outbox.claim(owner: "stopping", now: Self.now, leaseMS: 60_000, limit: 8))
            #expect(try await outbox.record([.release(id: message.id, lease: batch.lease)]) == 1)
            let again = try #require(
                try await outbox.claim(owner: "other", now: Self.now + 1, leaseMS: 60_000, limit: 8))
            #expect(again.messages.map(\.id) == [message.id])
            #expect(RelayState(message: again.messages[0].document)?.status == .pending)
        }
    }

    @Test func aRelayPauseKeepsTheLongestWaitAnyReplicaWasTold() async throws {
        try await TestDatabase.with { database in
            let pauses = RelayPauseDAO(database: database)
            #expect(try await pauses.until(project: "p") == nil)
            try await pauses.pause(project: "p", until: Self.now + 5_000, reason: "503", by: "a", now: Self.now)
            try await pauses.pause(project: "p", until: Self.now + 1_000, reason: "503", by: "b", now: Self.now)
            #expect(try await pauses.until(project: "p") == Self.now + 5_000)
            try await pauses.pause(project: "p", until: Self.now + 60_000, reason: "429", by: "b", now: Self.now)
            #expect(try await pauses.until(project: "p") == Self.now + 60_000)
            #expect(try await pauses.until(project: "q") == nil)
        }
    }

    @Test func aClaimNeverTakesWhatTheWorkerStillHolds() async throws {
        try await TestDatabase.with { database in
            let seeded = try await seed(database, count: 2)
            let outbox = OutboxDAO(database: database)
            let batch = try #require(
                try await outbox.claim(
                    owner: "w", now: Self.now, leaseMS: 8, limit: 8,
                    excluding: [seeded[0].id]))
            #expect(batch.messages.map(\.id) == [seeded[1].id])
        }
    }
}

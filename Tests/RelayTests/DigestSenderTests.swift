import DAO
import FCM
import Foundation
import HubTime
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// The daily digests' sender, one round at a time (`sendRound`) on a fake clock, against the test database and FCM in
/// memory: two replicas' senders on one database, and one that died holding the digests' lease.
@Suite("Digests on a fake clock")
struct DigestSenderTests {
    /// The subject the persons hold for their digests.
    static let topic = "66a0c0ffee00000000000001-66a0c0ffee00000000000002-66a0c0ffee00000000000003"

    /// A sender of `relay`'s database through its outbox worker's lane (each one its own replica: its own owner).
    func sender(_ relay: RelayFixture, configuration: DigestSender.Configuration = .init()) throws -> DigestSender {
        try #require(
            DigestSender(
                stores: DigestStores(database: relay.database, policy: .standard, now: relay.clock.unix),
                lane: relay.outbox.deviceLane, configuration: configuration, logger: relay.logger))
    }

    /// `persons` with a phone each (`token-<person>`) and the subject in digest mode, their digests due in a minute,
    /// and two messages of the subject stored after they chose it; returns when the digests are due.
    func scenario(_ relay: RelayFixture, persons: [String]) async throws -> Int64 {
        let settings = PersonSettingsDAO(database: relay.database, now: relay.clock.unix)
        let schedule = DigestScheduleDAO(database: relay.database, now: relay.clock.unix)
        let dueAt = relay.clock.now + 60_000
        for person in persons {
            _ = try await relay.device("token-\(person)", person: person)
            try await settings.setDelivery(.digest, scope: .subject, id: Self.topic, for: person)
            try await schedule.plan(person, dueAt: dueAt)
        }
        relay.clock.advance(by: .seconds(1))
        _ = try await relay.topicMessage(Self.topic)
        relay.clock.advance(by: .seconds(1))
        _ = try await relay.topicMessage(Self.topic, distribution: .information)
        return dueAt
    }

    /// The digests FCM got, by token.
    func digests(_ relay: RelayFixture) -> [String: [InMemoryFCM.Sent]] {
        Dictionary(grouping: relay.fcm.sent.filter { $0.data["audience"] == "digest" }, by: { $0.token ?? "" })
    }

    @Test func oneReplicaAtATimeSendsEachDigestOnceAndPlansTheNext() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let persons = (1...5).map { "person-\($0)" }
            let dueAt = try await scenario(relay, persons: persons)
            let (first, second) = (try sender(relay), try sender(relay))

            #expect(try await first.sendRound() == DigestSender.Round(), "nothing is due before its time")
            relay.clock.advance(to: dueAt)
            // The first replica holds the digests' lease (taken at its round before): the second sends nothing.
            #expect(try await second.sendRound().claimed == 0)
            let round = try await first.sendRound()
            #expect(round == DigestSender.Round(claimed: 5, sent: 5, devices: 5, messages: 10))
            #expect(try await second.sendRound().claimed == 0)
            let sent = digests(relay)
            #expect(Set(sent.keys) == Set(persons.map { "token-\($0)" }))
            #expect(sent.values.allSatisfy { $0.count == 1 && $0.first?.data["count"] == "2" })

            // Recorded: the next is due the next day at 17:00 UTC, and nothing is due until then.
            let schedule = DigestScheduleDAO(database: database, now: relay.clock.unix)
            let status = try #require(try await schedule.status(of: "person-3"))
            #expect(status.dueAt == DigestPolicy.standard.defaultHour.next(after: dueAt, in: .gmt))
            #expect(status.last?.count == 2)
            #expect(try await first.sendRound().claimed == 0)
            #expect(digests(relay).values.map(\.count).reduce(0, +) == 5, "each once")
        }
    }

    @Test func aRoundReadsWhatIsDueOnceAndSendsItAPageAtATime() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let persons = (1...7).map { "person-\($0)" }
            let dueAt = try await scenario(relay, persons: persons)
            var configuration = DigestSender.Configuration()
            configuration.page = 2
            let sender = try sender(relay, configuration: configuration)
            relay.clock.advance(to: dueAt)
            // Seven digests in four pages of one round: each once, each recorded.
            #expect(
                try await sender.sendRound(limit: 1_000)
                    == DigestSender.Round(claimed: 7, sent: 7, devices: 7, messages: 14))
            #expect(
                digests(relay).mapValues(\.count)
                    == Dictionary(uniqueKeysWithValues: persons.map { ("token-\($0)", 1) }))
            let schedule = DigestScheduleDAO(database: database, now: relay.clock.unix)
            for person in persons {
                #expect(try await schedule.status(of: person)?.last?.count == 2, "\(person)'s digest recorded")
            }
            #expect(try await sender.sendRound(limit: 1_000).claimed == 0)
        }
    }

    @Test func aReplicaThatStopsGivesTheLeaseUpAndAnotherSendsAtOnce() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let dueAt = try await scenario(relay, persons: ["ada", "cy"])
            let (stopping, other) = (try sender(relay), try sender(relay))
            let leases = database.collection(CollectionName.leases)
            let running = Task { await stopping.run() }
            try await eventually {
                try await leases.findOne(["_id": .string(DigestScheduleDAO.senderLease)])?["owner"]?.stringValue
                    == stopping.owner
            }
            let lease = DigestSender.Configuration().lease.milliseconds
            let held = LeaseDAO(database: database, now: relay.clock.unix)
            #expect(try await held.hold(DigestScheduleDAO.senderLease, owner: "another", leaseMS: lease) == nil)
            running.cancel()
            await running.value
            // Given up on the way out: the other replica need not wait for it to run out.
            #expect(try await leases.countDocuments(["_id": .string(DigestScheduleDAO.senderLease)]) == 0)
            relay.clock.advance(to: dueAt)
            #expect(try await other.sendRound().sent == 2)
            #expect(digests(relay).mapValues(\.count) == ["token-ada": 1, "token-cy": 1])
        }
    }

    @Test func theDigestsOfAReplicaThatDiedHoldingTheLeaseGoOnceItRunsOut() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let dueAt = try await scenario(relay, persons: ["ada", "cy"])
            relay.clock.advance(to: dueAt)
            // Another replica took the lease for its round and died.
            let leases = LeaseDAO(database: database, now: relay.clock.unix)
            let lease = DigestSender.Configuration().lease.milliseconds
            #expect(try await leases.hold(DigestScheduleDAO.senderLease, owner: "died", leaseMS: lease) != nil)
            let sender = try sender(relay)

            #expect(try await sender.sendRound().claimed == 0)
            relay.clock.advance(by: .milliseconds(lease))
            #expect(try await sender.sendRound().claimed == 0, "the lease holds through its last millisecond")
            #expect(relay.fcm.sent.isEmpty)
            relay.clock.advance(by: .milliseconds(1))
            #expect(try await sender.sendRound().sent == 2)
            #expect(digests(relay).mapValues(\.count) == ["token-ada": 1, "token-cy": 1])
        }
    }
}

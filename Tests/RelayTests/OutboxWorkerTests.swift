import DAO
import FCM
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// The outbox worker one claim at a time (`step`) on a fake clock, against the test database and FCM in memory: what
/// it sends, what it records, and when a message it could not send, or another worker holds, is taken again.
@Suite("The outbox worker on a fake clock")
struct OutboxWorkerTests {
    @Test func aDueTopicMessageIsClaimedSentToItsTopicAndRecordedSent() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let message = try await relay.topicMessage()
            let later = try await relay.topicMessage(dueIn: 60_000)

            #expect(await relay.outbox.step() == 1, "the message due now, not the one due in a minute")
            let sent = relay.fcm.sent
            #expect(sent.map(\.component) == [.notification, .data], "an Alert: its pop-up, then its data")
            #expect(sent.allSatisfy { $0.topic == message.topicKey && $0.token == nil && $0.condition == nil })
            #expect(sent.allSatisfy { $0.data["msi_key"] == message.msiKey.hex })
            let state = try #require(try await relay.relay(message))
            #expect(state.status == .sent && state.lease == nil)
            #expect(state.components[.notification]?.name == "projects/test/messages/1")
            #expect(state.components[.data]?.name == "projects/test/messages/2")
            #expect(try await relay.relay(later)?.status == .pending)

            #expect(await relay.outbox.step() == 0, "nothing more is due")
            #expect(relay.fcm.sent.count == 2)
        }
    }

    @Test func aRetryableFailureIsDueAgainAfterItsBackoffAndSentOnlyOnceTheClockPassesIt() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let start = relay.clock.now
            let message = try await relay.topicMessage(distribution: .information)
            relay.fcm.answerNext(.failure(.internalError))

            #expect(await relay.outbox.step() == 1)
            let failed = try #require(try await relay.relay(message))
            #expect(failed.status == .pending && failed.lease == nil)
            #expect(failed.components[.data]?.lastError?.contains("internal") == true)
            // The first wait: 10 s of backoff, jittered in its upper half.
            #expect((start + 5_000...start + 10_000).contains(failed.dueAt), "due at \(failed.dueAt - start) ms")

            relay.clock.advance(to: failed.dueAt - 1)
            #expect(await relay.outbox.step() == 0, "not due a millisecond before its time")
            #expect(relay.fcm.sent.count == 1)

            relay.clock.advance(to: failed.dueAt)
            #expect(await relay.outbox.step() == 1)
            #expect(relay.fcm.sent.count == 2)
            let sent = try #require(try await relay.relay(message))
            #expect(sent.status == .sent && sent.attempts == 2)
        }
    }

    @Test func aServiceUnavailableWithRetryAfterPausesTheProjectAndTheMessageUntilThen() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let start = relay.clock.now
            let message = try await relay.topicMessage(distribution: .information)
            let other = try await relay.topicMessage(distribution: .information, dueIn: 10_000)
            relay.fcm.answerNext(.failure(.unavailable(retryAfter: .seconds(30))))

            #expect(await relay.outbox.step() == 1)
            let paused = try #require(try await relay.relay(message))
            #expect(paused.status == .pending && paused.dueAt == start + 30_000, "Retry-After, not the 5-10 s backoff")
            #expect(relay.outbox.gate.pause() == .seconds(30))

            // The other message falls due meanwhile, but the project is paused: nothing is claimed nor sent.
            relay.clock.advance(to: start + 29_999)
            #expect(await relay.outbox.step() == 0)
            #expect(relay.fcm.sent.count == 1)
            #expect(try await relay.relay(other)?.attempts == 0)

            relay.clock.advance(to: start + 30_000)
            #expect(await relay.outbox.step() == 2)
            #expect(relay.fcm.sent.count == 3)
            #expect(try await relay.relay(message)?.status == .sent)
            #expect(try await relay.relay(other)?.status == .sent)
        }
    }

    @Test func aMessageLeasedByAnotherWorkerIsTakenOnlyOnceItsLeaseHasRunOut() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let message = try await relay.topicMessage(distribution: .information)
            let elsewhere = try #require(
                try await OutboxDAO(database: database).claim(
                    owner: "another-replica", now: relay.clock.now, leaseMS: 20_000, limit: 1))
            #expect(elsewhere.messages.map(\.id) == [message.id])
            let leaseEnd = try #require(try await relay.relay(message)?.lease?.until)

            #expect(await relay.outbox.step() == 0)
            relay.clock.advance(to: leaseEnd)
            #expect(await relay.outbox.step() == 0, "held up to the last millisecond of its lease")
            #expect(relay.fcm.sent.isEmpty)

            relay.clock.advance(to: leaseEnd + 1)
            #expect(await relay.outbox.step() == 1)
            #expect(relay.fcm.sent.count == 1)
            let state = try #require(try await relay.relay(message))
            #expect(state.status == .sent && state.attempts == 2)
        }
    }

    @Test func aTokenFCMCallsUnregisteredMarksItsDeviceAndDeliveryAndTheOthersAreSent() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let kept = try await relay.device("token-kept", person: "ada")
            let gone = try await relay.device("token-gone", person: "ben")
            relay.fcm.answer(token: "token-gone", with: .failure(.unregistered))
            let message = try await relay.personsMessage(["ada", "ben"])

            #expect(await relay.outbox.step() == 1)
            #expect(Set(relay.fcm.tokens) == ["token-kept", "token-gone"])
            #expect(relay.fcm.sent.allSatisfy { $0.component == .device && $0.topic == nil })
            let deliveries = try await relay.deliveries(of: message)
            #expect(deliveries[kept.id]?.state == .sent)
            #expect(deliveries[gone.id]?.state == .unregistered)
            #expect(try await relay.devices.get(gone.id).state == .unregistered)
            #expect(try await relay.devices.get(kept.id).state == .active)
            #expect(try await relay.relay(message)?.status == .sent)

            // The next message to both goes to the registered device alone.
            _ = try await relay.personsMessage(["ada", "ben"])
            #expect(await relay.outbox.step() == 1)
            #expect(relay.fcm.tokens.filter { $0 == "token-gone" }.count == 1)
            #expect(relay.fcm.tokens.filter { $0 == "token-kept" }.count == 2)
        }
    }
}

import DAO
import FCM
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// The escalation worker one step at a time on a fake clock, against the test database and FCM in memory: a message
/// that asked for an acknowledgement is sent by the outbox worker (which fixes its audience), then each `within_s`
/// passes on the clock.
@Suite("The escalation worker on a fake clock")
struct EscalationWorkerTests {
    /// The escalation worker of `relay`, sending through its outbox worker's lane.
    func escalation(_ relay: RelayFixture) throws -> EscalationWorker {
        try #require(
            EscalationWorker(
                database: relay.database, lane: relay.outbox.deviceLane, webhookSubscribers: WebhookSubscribers(),
                logger: relay.logger, now: relay.clock.unix))
    }

    /// `device` acknowledges `message` now.
    func acknowledge(_ message: Message, on device: Device, _ relay: RelayFixture) async throws {
        _ = try await ReceiptDAO(database: relay.database, now: relay.clock.unix).store([
            Receipt(
                message: message.id, device: device.id, person: device.person, event: .acknowledged, response: nil,
                at: relay.clock.now, platform: device.platform)
        ])
    }

    /// The message's `ack` as stored now.
    func ackState(_ message: Message, _ relay: RelayFixture) async throws -> BSONDocument {
        try #require(try await relay.stored(message)?["ack"]?.documentValue)
    }

    @Test func afterWithinSecondsOnlyTheDevicesThatHaveNotAcknowledgedGetTheMessageAgainOneUrgencyUp() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let worker = try escalation(relay)
            let ada = try await relay.device("token-ada", person: "ada")
            let ben = try await relay.device("token-ben", person: "ben")
            _ = try await relay.device("token-cy", person: "cy")
            let message = try await relay.personsMessage(
                ["ada", "ben", "cy"], ack: AckRequest(withinSeconds: 60, resend: 2))
            let sentAt = relay.clock.now

            #expect(await relay.outbox.step() == 1)
            #expect(relay.fcm.sent.count == 3)
            #expect(try await ackState(message, relay)["next_at"]?.int64Value == sentAt + 60_000, "the audience fixed")
            try await acknowledge(message, on: ada, relay)

            relay.clock.advance(to: sentAt + 59_999)
            #expect(try await !worker.step(), "within_s has not passed")
            #expect(relay.fcm.sent.count == 3)

            relay.clock.advance(to: sentAt + 60_000)
            #expect(try await worker.step())
            let first = Array(relay.fcm.sent.dropFirst(3))
            #expect(Set(first.compactMap(\.token)) == ["token-ben", "token-cy"], "not to Ada, who acknowledged")
            #expect(first.allSatisfy { $0.data["urgency"] == "time-sensitive" }, "active, one level up")
            var ack = try await ackState(message, relay)
            #expect(ack["round"]?.int64Value == 1)
            #expect(ack["next_at"]?.int64Value == sentAt + 120_000)
            let round = try #require(ack["rounds"]?.arrayValue?.first?.documentValue)
            #expect(round["silent"]?.int64Value == 2 && round["sent"]?.int64Value == 2)

            // Ben acknowledges after the first reminder: the second goes to Cy alone, once its time has come.
            try await acknowledge(message, on: ben, relay)
            #expect(try await !worker.step())
            relay.clock.advance(to: sentAt + 120_000)
            #expect(try await worker.step())
            #expect(relay.fcm.sent.dropFirst(5).compactMap(\.token) == ["token-cy"])
            ack = try await ackState(message, relay)
            #expect(ack["round"]?.int64Value == 2)
        }
    }

    @Test func afterTheLastRoundTheEscalationEndsWithoutSendingAgain() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let worker = try escalation(relay)
            _ = try await relay.device("token-ada", person: "ada")
            _ = try await relay.device("token-ben", person: "ben")
            let message = try await relay.personsMessage(["ada", "ben"], ack: AckRequest(withinSeconds: 30, resend: 1))
            let sentAt = relay.clock.now
            #expect(await relay.outbox.step() == 1)

            relay.clock.advance(to: sentAt + 30_000)
            #expect(try await worker.step())
            #expect(relay.fcm.sent.count == 4, "the one round: both again")

            // The round's within_s passes: the end, with no re-send.
            relay.clock.advance(to: sentAt + 60_000)
            #expect(try await worker.step())
            #expect(relay.fcm.sent.count == 4)
            let ack = try await ackState(message, relay)
            #expect(ack["finished_at"]?.int64Value == sentAt + 60_000)
            #expect(ack["unacknowledged"]?.int64Value == 2)
            #expect(ack["next_at"] == nil && ack["round"]?.int64Value == 1)

            relay.clock.advance(by: .seconds(3_600))
            #expect(try await !worker.step(), "nothing more is ever due")
            #expect(relay.fcm.sent.count == 4)
        }
    }
}

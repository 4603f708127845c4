import DAO
import FCM
import HubTime
import Mongo
import MongoTestSupport
@testable import Relay
import Testing

/// The sender of what quiet hours held back, one pass at a time (`sendDue`) on a fake clock, against the test database
/// and FCM in memory: the outbox worker holds a message back from a device in its quiet hours, and the clock passes
/// the end of its window.
@Suite("Held-back sends on a fake clock")
struct QuietDeferralSenderTests {
    /// 2027-01-15 16:00 UTC: the end of the window 14:00-16:00 UTC the fake clock starts in.
    static let windowEnd = FakeClock.start - 500 + 3_600_000

    /// The sender of `relay`, through its outbox worker's lane.
    func sender(_ relay: RelayFixture) throws -> QuietDeferralSender {
        try #require(QuietDeferralSender(stores: relay.quiet, lane: relay.outbox.deviceLane, logger: relay.logger))
    }

    /// A message to Ada and to Cy, whose quiet hours hold now; sent by the outbox worker: Cy's send is held back.
    func heldBack(_ relay: RelayFixture) async throws -> (message: Message, ada: Device, cy: Device) {
        let ada = try await relay.device("token-ada", person: "ada")
        let cy = try await relay.device(
            "token-cy", person: "cy", quietHours: try QuietHours.parse(from: "14:00", to: "16:00", tz: "UTC").get())
        let message = try await relay.personsMessage(["ada", "cy"])
        #expect(await relay.outbox.step() == 1)
        #expect(relay.fcm.tokens == ["token-ada"], "Cy is in her quiet hours")
        let deliveries = try await relay.deliveries(of: message)
        #expect(deliveries[ada.id]?.state == .sent && deliveries[cy.id]?.state == .deferred)
        let deferral = try #require(try await relay.quiet.deferrals.deferrals(of: message.id).first)
        #expect(deferral.device == cy.id && deferral.dueAt == Self.windowEnd && deferral.state == .pending)
        return (message, ada, cy)
    }

    @Test func aHeldBackSendIsNotSentBeforeItsWindowEndsAndIsSentOnceAfter() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let sender = try sender(relay)
            let (message, _, cy) = try await heldBack(relay)

            #expect(try await sender.sendDue() == 0)
            relay.clock.advance(to: Self.windowEnd - 1)
            #expect(try await sender.sendDue() == 0, "a millisecond before the window ends")
            #expect(relay.fcm.tokens == ["token-ada"])

            relay.clock.advance(to: Self.windowEnd)
            #expect(try await sender.sendDue() == 1)
            #expect(relay.fcm.tokens == ["token-ada", "token-cy"])
            #expect(relay.fcm.sent.last?.data["msi_key"] == message.msiKey.hex)
            #expect(try await relay.deliveries(of: message)[cy.id]?.state == .sent)
            #expect(try await relay.quiet.deferrals.deferrals(of: message.id).map(\.state) == [.sent])

            relay.clock.advance(by: .seconds(24 * 3_600))
            #expect(try await sender.sendDue() == 0, "sent once")
            #expect(relay.fcm.tokens.count == 2)
        }
    }

    @Test func aHeldBackSendFCMAsksToWaitForIsDueAgainAfterItsRetryAfter() async throws {
        try await TestDatabase.with { database in
            let relay = RelayFixture(database: database)
            let sender = try sender(relay)
            let (message, _, cy) = try await heldBack(relay)
            relay.fcm.answer(token: "token-cy", with: .failure(.unavailable(retryAfter: .seconds(20))))

            relay.clock.advance(to: Self.windowEnd)
            #expect(try await sender.sendDue() == 1)
            var deferral = try #require(try await relay.quiet.deferrals.deferrals(of: message.id).first)
            #expect(deferral.state == .pending && deferral.dueAt == Self.windowEnd + 20_000)
            #expect(try await relay.deliveries(of: message)[cy.id]?.state == .deferred)

            relay.fcm.answer(token: "token-cy", with: .success("projects/test/messages/cy"))
            relay.clock.advance(to: Self.windowEnd + 19_999)
            #expect(try await sender.sendDue() == 0)
            relay.clock.advance(to: Self.windowEnd + 20_000)
            #expect(try await sender.sendDue() == 1)
            deferral = try #require(try await relay.quiet.deferrals.deferrals(of: message.id).first)
            #expect(deferral.state == .sent)
            #expect(relay.fcm.tokens == ["token-ada", "token-cy", "token-cy"])
            #expect(try await relay.deliveries(of: message)[cy.id]?.state == .sent)
        }
    }
}

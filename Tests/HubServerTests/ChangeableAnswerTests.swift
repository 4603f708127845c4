import DAO
import FakeFCM
import Foundation
import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Invitations whose answers may change (`"ack": {..., "changeable": true}`): a person's latest answer, on any of
/// their devices, is their answer; the report counts persons' current answers; each change is a
/// `message.acknowledged` event with the previous answer. Against the real hub, relay and fake FCM.
@Suite("Changeable answers")
struct ChangeableAnswerTests {
    typealias Handset = ReceiptTests.Handset

    static let phone = Handset("inv-a-phone", person: "guest-a")
    static let tablet = Handset("inv-a-tablet", person: "guest-a", platform: .ios)
    static let other = Handset("inv-b-phone", person: "guest-b")

    /// Sends an invitation to the group `friends` and waits until every device has it; returns its key.
    static func invite(changeable: Bool, on hub: HubHarness, _ fake: FakeFCM) async throws -> String {
        let response = try await hub.request(
            .post, "/message", as: .admin,
            json: #"""
                {"title": "Board games night", "desc": "Friday 19:00", "message": "Will you come?",
                 "distribution": "Alert", "to": {"groups": ["friends"]},
                 "ack": {"responses": ["Yes", "No"], "within_s": 600, "changeable": \#(changeable)}}
                """#)
        #expect(response.status == .created, "\(response.text)")
        let key = try #require(try response.json()["msi_key"]?.stringValue)
        try await eventually("every device got the invitation") {
            [phone, tablet, other].allSatisfy {
                AcknowledgementTests.requests(to: $0.token, fake).contains {
                    ($0["data"] as? [String: String])?["msi_key"] == key
                }
            }
        }
        return key
    }

    /// Posts one acknowledgement with `response` from `handset`; its status.
    static func answer(_ key: String, _ response: String, from handset: Handset, on hub: HubHarness) async throws
        -> String
    {
        try await ReceiptTests.post(
            [ReceiptTests.entry(key, "acknowledged", response: response, at: UnixTime.nowMilliseconds())],
            as: handset, on: hub)[0].status
    }

    @Test func theLatestAnswerOnAnyDeviceCountsAndEachChangeIsAnEventWithThePreviousOne() async throws {
        try await FakeFCM.with { fake in
            try await WebhookReceiver.with { receiver in
                try await HubHarness.with(
                    seed: { database in
                        try await ReceiptTests.seed([Self.phone, Self.tablet, Self.other], in: database)
                        _ = try await GroupDAO(database: database).replace(
                            id: "friends", name: "Friends", access: [], persons: ["guest-a", "guest-b"])
                    }, relay: try FanOutTests.relay(to: fake), webhooks: try WebhookTests.loopback()
                ) { hub in
                    let created = try await WebhookTests.create(
                        hub, url: receiver.url, events: ["message.acknowledged"])
                    receiver.expect(secret: try #require(created["secret"]?.stringValue))
                    let key = try await Self.invite(changeable: true, on: hub, fake)
                    // The pop-up carries its two answers for the lock screen.
                    let popUp = try #require(
                        AcknowledgementTests.requests(to: Self.tablet.token, fake).first {
                            ($0["data"] as? [String: String])?["msi_key"] == key
                        })
                    let aps = ((popUp["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"]
                    #expect((aps as? [String: Any])?["category"] as? String == "MSI_ACK_2")

                    #expect(try await Self.answer(key, "Yes", from: Self.phone, on: hub) == "stored")
                    #expect(try await Self.answer(key, "No", from: Self.other, on: hub) == "stored")
                    // Guest A changes their mind on the tablet, then again on the phone (whose receipt is known).
                    #expect(try await Self.answer(key, "No", from: Self.tablet, on: hub) == "stored")
                    #expect(try await Self.answer(key, "No", from: Self.phone, on: hub) == "duplicate")
                    #expect(try await Self.answer(key, "Yes", from: Self.phone, on: hub) == "stored")

                    let report = try await hub.request(.get, "/message/\(key)/receipts", as: .admin).json()
                    #expect(report[path: "persons.acknowledged"]?.int64Value == 2)
                    #expect(report[path: "persons.responses"] == ["No": 1, "Yes": 1])

                    try await eventually("the receiver has every event") { receiver.accepted.count >= 4 }
                    try await Task.sleep(for: .milliseconds(300))
                    let events = receiver.accepted.map(\.body)
                    #expect(events.count == 4)
                    let ofA = events.filter { $0[path: "data.person"] == "guest-a" }
                    #expect(ofA.map { $0[path: "data.response"] } == ["Yes", "No", "Yes"])
                    #expect(ofA.map { $0[path: "data.previous_response"] } == [nil, "Yes", "No"])
                    #expect(ofA.map { $0[path: "data.changed"] } == [nil, true, true])
                }
            }
        }
    }

    @Test func withoutChangeableThePersonsFirstAnswerStays() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: { database in
                    try await ReceiptTests.seed([Self.phone, Self.tablet, Self.other], in: database)
                    _ = try await GroupDAO(database: database).replace(
                        id: "friends", name: "Friends", access: [], persons: ["guest-a", "guest-b"])
                }, relay: try FanOutTests.relay(to: fake)
            ) { hub in
                let key = try await Self.invite(changeable: false, on: hub, fake)
                #expect(try await Self.answer(key, "Yes", from: Self.phone, on: hub) == "stored")
                #expect(try await Self.answer(key, "No", from: Self.tablet, on: hub) == "stored")
                #expect(try await Self.answer(key, "No", from: Self.phone, on: hub) == "duplicate")
                let report = try await hub.request(.get, "/message/\(key)/receipts", as: .admin).json()
                // Not an invitation whose answers change: the report is as it always was.
                #expect(report[path: "persons.responses"] == nil)
                #expect(report[path: "persons.acknowledged"]?.int64Value == 1)
                let refused = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "T", "desc": "D", "message": "M", "distribution": "Alert", "to": {"groups": ["friends"]},
                         "ack": {"within_s": 60, "changeable": "yes"}}
                        """#)
                #expect(refused.status == .unprocessableContent && refused.errorCode == "invalid_ack")
            }
        }
    }
}

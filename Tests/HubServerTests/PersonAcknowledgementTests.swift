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

/// A message to persons and groups is acknowledged by a person, on any of their devices: the escalation stops for
/// all of that person's devices, their other devices are told in the background (`acknowledged: "1"`), the webhook
/// names the persons who did not answer with their devices, and the reach report counts persons beside devices.
@Suite("Acknowledgement per person", .tags(.faults))
struct PersonAcknowledgementTests {
    typealias Handset = ReceiptTests.Handset

    @Test func onePersonAnsweringOnOnePhoneAnswersForTheirTabletToo() async throws {
        let phone = Handset("pa-phone", person: "pupil-a"), tablet = Handset("pa-tablet", person: "pupil-a")
        let other = Handset("pb-phone", person: "pupil-b", platform: .ios)
        try await FakeFCM.with { fake in
            try await WebhookReceiver.with { receiver in
                try await HubHarness.with(
                    seed: { database in
                        try await ReceiptTests.seed([phone, tablet, other], in: database)
                        _ = try await GroupDAO(database: database).replace(
                            id: "form-3", name: "Form 3", access: [],
                            persons: ["pupil-a", "pupil-b"])
                    }, relay: try FanOutTests.relay(to: fake), webhooks: try WebhookTests.loopback()
                ) { hub in
                    try await AcknowledgementTests.subscribe(receiver, on: hub)
                    let response = try await hub.request(
                        .post, "/message", as: .admin,
                        json: #"""
                            {"title": "Fire drill", "desc": "Confirm", "message": "Confirm you are out.",
                             "distribution": "Alert", "to": {"groups": ["form-3"]},
                             "ack": {"within_s": 2, "resend": 1}}
                            """#)
                    #expect(response.status == .created, "\(response.text)")
                    let key = try #require(try response.json()["msi_key"]?.stringValue)
                    try await eventually("every device got the message") {
                        [phone, tablet, other].allSatisfy { !AcknowledgementTests.requests(to: $0.token, fake).isEmpty }
                    }
                    let results = try await ReceiptTests.post(
                        [ReceiptTests.entry(key, "acknowledged")], as: phone,
                        on: hub)
                    #expect(results.map(\.status) == ["stored"])

                    // The tablet is told in the background: no notification, the key and acknowledged "1".
                    try await eventually("the tablet gets the acknowledged notice") {
                        AcknowledgementTests.requests(to: tablet.token, fake).contains {
                            ($0["data"] as? [String: String])?["acknowledged"] == "1"
                        }
                    }
                    let notice = try #require(
                        AcknowledgementTests.requests(to: tablet.token, fake).first {
                            ($0["data"] as? [String: String])?["acknowledged"] == "1"
                        })
                    #expect(notice["notification"] == nil)
                    #expect((notice["data"] as? [String: String]) == ["msi_key": key, "acknowledged": "1"])
                    // Nor does the answering phone, nor the other person's phone, get it.
                    #expect(
                        !AcknowledgementTests.requests(to: phone.token, fake).contains {
                            ($0["data"] as? [String: String])?["acknowledged"] == "1"
                        })

                    try await eventually("the receiver gets message.unacknowledged", within: .seconds(90)) {
                        !receiver.accepted.isEmpty
                    }
                    let event = try #require(receiver.received.first)
                    #expect(event.body[path: "data.persons"] == ["pupil-b"])
                    #expect(event.body[path: "data.devices"] == .array([.string(other.id.hex)]))
                    #expect(
                        event.body[path: "data.unacknowledged"]
                            == [["person": "pupil-b", "devices": .array([.string(other.id.hex)])]])
                    // The escalation re-sent to the other person's phone only: the tablet got the first send and the
                    // notice, never a re-send.
                    #expect(AcknowledgementTests.requests(to: other.token, fake).count == 2)
                    #expect(
                        AcknowledgementTests.requests(to: tablet.token, fake).filter {
                            ($0["data"] as? [String: String])?["acknowledged"] == nil
                        }.count == 1)
                    #expect(AcknowledgementTests.requests(to: phone.token, fake).count == 1)

                    let report = try await hub.request(.get, "/message/\(key)/receipts", as: .admin).json()
                    #expect(report["persons"] == ["audience": 2, "acknowledged": 1, "not_answered": 1])
                    // Devices are listed each for itself: the tablet did not answer, its person did.
                    #expect(
                        Set(
                            report["not_answered_devices"]?.arrayValue?.compactMap {
                                $0.documentValue?["device"]?.stringValue
                            } ?? []) == [tablet.id.hex, other.id.hex])

                    // The tablet answering later changes nothing for the person: no second notice to the phone.
                    _ = try await ReceiptTests.post([ReceiptTests.entry(key, "acknowledged")], as: tablet, on: hub)
                    let recount = try await hub.request(.get, "/message/\(key)/receipts", as: .admin).json()
                    #expect(recount[path: "persons.acknowledged"]?.int64Value == 1)
                    try await Task.sleep(for: .seconds(1))
                    #expect(
                        !AcknowledgementTests.requests(to: phone.token, fake).contains {
                            ($0["data"] as? [String: String])?["acknowledged"] == "1"
                        })
                }
            }
        }
    }
}

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

/// What a phone learns of an acknowledgement request: `ack` and `ack_responses` in its push's data, and `ack`
/// (`responses`, `within_s`) in its catch-up, never the escalation's bookkeeping. Against a real hub, the real
/// database and the fake FCM.
@Suite("Acknowledgement request as the phone sees it")
struct AcknowledgementViewTests {
    typealias Handset = ReceiptTests.Handset

    /// The escalation's own fields, which stay on the server.
    static let bookkeeping = [
        "round", "rounds", "cursor", "lease_owner", "lease_until", "next_at", "resend",
        "unacknowledged", "finished_at",
    ]

    @Test func aDevicesCatchUpAndPushShowTheResponsesAndNotTheBookkeeping() async throws {
        let phone = Handset("ack-view-0", person: "pupil-0")
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: { database in
                    try await ReceiptTests.seed([phone], in: database)
                    _ = try await GroupDAO(database: database).replace(
                        id: "class-7b", name: "Class 7b", access: [],
                        persons: ["pupil-0"])
                }, relay: try FanOutTests.relay(to: fake)
            ) { hub in
                let asked = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Are you safe?", "desc": "Answer now", "message": "Tell us you are safe.",
                         "distribution": "Information", "to": {"groups": ["class-7b"]}, "urgency": "critical",
                         "ack": {"responses": ["I'm safe", "I need help"], "within_s": 600, "resend": 1}}
                        """#)
                #expect(asked.status == .created, "\(asked.text)")
                let key = try #require(try asked.json()["msi_key"]?.stringValue)
                let plain = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "Menu", "desc": "", "message": "Soup", "distribution": "Information",
                         "to": {"persons": ["pupil-0"]}}
                        """#)
                let plainKey = try #require(try plain.json()["msi_key"]?.stringValue)

                // Sent, and its audience fixed: the stored ack now holds the escalation's progress.
                try await eventually("the relay fixes the audience") {
                    try await AcknowledgementTests.stored(key, in: hub.database)[path: "ack.next_at"] != nil
                }
                try await eventually("both messages reach the fake") {
                    AcknowledgementTests.requests(to: phone.token, fake).count == 2
                }
                let pushes = AcknowledgementTests.requests(to: phone.token, fake).compactMap {
                    $0["data"] as? [String: String]
                }
                let push = try #require(pushes.first { $0["msi_key"] == key })
                #expect(push["ack"] == "1" && push["ack_responses"] == #"["I'm safe","I need help"]"#)
                #expect(push["urgency"] == "critical")
                let plainPush = try #require(pushes.first { $0["msi_key"] == plainKey })
                #expect(plainPush["ack"] == nil && plainPush["ack_responses"] == nil)

                let page = try await hub.request(
                    .get, "/device/\(phone.id.hex)/messages?since=0",
                    as: .token(phone.secret))
                #expect(page.status == .ok, "\(page.text)")
                let messages = try page.json()["messages"]?.arrayValue?.compactMap(\.documentValue) ?? []
                let shown = try #require(messages.first { $0["msi_key"]?.stringValue == key })
                let ack = try #require(shown["ack"]?.documentValue)
                #expect(ack["responses"] == .array(["I'm safe", "I need help"]))
                #expect(ack["within_s"]?.int64Value == 600)
                #expect(Set(ack.keys) == ["responses", "within_s"])
                #expect(shown["urgency"]?.stringValue == "critical")
                let other = try #require(messages.first { $0["msi_key"]?.stringValue == plainKey })
                #expect(other["ack"] == nil)

                // The server keeps its bookkeeping (the phone's view leaves it out, not the database).
                let stored = try #require(
                    try await AcknowledgementTests.stored(key, in: hub.database)["ack"]?
                        .documentValue)
                #expect(stored["next_at"] != nil)
                #expect(Self.bookkeeping.allSatisfy { ack[$0] == nil })
            }
        }
    }

    @Test func aPlainAcknowledgementShowsAnEmptyListOfResponses() async throws {
        let phone = Handset("ack-view-plain", person: "pupil-1")
        try await HubHarness.with(seed: { database in
            try await ReceiptTests.seed([phone], in: database)
        }) { hub in
            let asked = try await hub.request(
                .post, "/message", as: .admin,
                json: #"""
                    {"title": "Read this", "desc": "", "message": "Please confirm.", "distribution": "Information",
                     "to": {"persons": ["pupil-1"]}, "ack": {"within_s": 60, "resend": 0}}
                    """#)
            #expect(asked.status == .created, "\(asked.text)")
            let page = try await hub.request(.get, "/device/\(phone.id.hex)/messages?since=0", as: .token(phone.secret))
            let messages = try page.json()["messages"]?.arrayValue?.compactMap(\.documentValue) ?? []
            let ack = try #require(messages.first?["ack"]?.documentValue)
            #expect(ack["responses"] == .array([]) && ack["within_s"]?.int64Value == 60)
        }
    }

    @Test func theAckKeysAreRefusedInASendersData() async throws {
        try await HubHarness.with { hub in
            for key in ["ack", "ack_responses"] {
                let refused = try await hub.request(
                    .post, "/message", as: .admin,
                    json: #"""
                        {"title": "t", "desc": "d", "message": "m", "distribution": "Information",
                         "to": {"persons": ["a"]}, "data": {"\#(key)": "1"}}
                        """#)
                #expect(refused.status == .unprocessableContent, "\(key)")
                #expect(refused.errorCode == "invalid_data", "\(key)")
            }
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }
}

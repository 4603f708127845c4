import DAO
import FakeFCM
import Foundation
import HubCore
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// Correcting and withdrawing a message from its page in the portal: its sender only, with the session's token, the
/// send rules of POST /message, and the phones told through the relay as PUT and DELETE /message/:msiKey tell them.
@Suite struct PortalEditTests {
    @Test func itsSenderCorrectsThenWithdrawsAMessageFromItsPageAndThePhonesAreTold() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: PortalBroadcastTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                var ann = PortalBrowser(hub: hub)
                let (csrf, _) = try await PortalBroadcastTests.open(&ann)
                let sent = try await ann.post(
                    "/portal/send",
                    pairs: [("_csrf", csrf)] + PortalBroadcastTests.hours + [
                        ("title", "Libary hours"), ("desc", "Open until 8"),
                        ("message", "The library is open until 8 pm."),
                    ])
                #expect(sent.status == .seeOther, "\(sent.text)")
                let location = try #require(sent.headers[.location])
                let key = String(location.split(separator: "/").last ?? "")
                try await eventually("the message at FCM") {
                    MessageCorrectionTests.requests(fake, key).contains { $0.message["notification"] != nil }
                }
                let page = try await ann.get(location)
                #expect(page.text.contains(#"<form method="post" action="/portal/messages/\#(key)/correct""#))
                #expect(page.text.contains(#"<form method="post" action="/portal/messages/\#(key)/withdraw""#))
                #expect(page.text.contains(#"id="correct-title" name="title" value="Libary hours""#))
                let texts = [
                    ("title", "Libary hours"), ("desc", "Open until 8"), ("message", "The library is open until 8 pm."),
                ]

                // Another communicator may not, nor a form without the session's token, nor texts left as they were,
                // nor an Alert without its notification text: nothing is stored.
                var bea = PortalBrowser(hub: hub)
                let beaCSRF = try await PortalBroadcastTests.open(&bea, as: "bea", password: "bea-password-1").csrf
                #expect(
                    try await bea.post("/portal/messages/\(key)/correct", pairs: [("_csrf", beaCSRF)] + texts)
                        .status == .notFound)
                #expect(try await bea.post("/portal/messages/\(key)/withdraw", ["_csrf": beaCSRF]).status == .notFound)
                #expect(try await ann.post("/portal/messages/\(key)/correct", pairs: texts).status == .forbidden)
                let unchanged = try await ann.post("/portal/messages/\(key)/correct", pairs: [("_csrf", csrf)] + texts)
                #expect(unchanged.status == .unprocessableContent && unchanged.text.contains("Nothing to correct"))
                let noDesc = try await ann.post(
                    "/portal/messages/\(key)/correct",
                    pairs: [
                        ("_csrf", csrf),
                        ("title", "Library hours"), ("desc", " "), ("message", "The library is open until 8 pm."),
                    ])
                #expect(noDesc.status == .unprocessableContent)
                var stored = try await PortalBroadcastTests.stored(hub)
                #expect(stored["title"] == "Libary hours" && stored["corrections"] == nil && stored["withdrawn"] == nil)

                // The sender corrects the title: stored, and the phones get the corrected texts.
                let corrected = try await ann.post(
                    "/portal/messages/\(key)/correct",
                    pairs: [
                        ("_csrf", csrf),
                        ("title", "Library hours"), ("desc", "Open until 8"),
                        ("message", "The library is open until 8 pm."),
                    ])
                #expect(corrected.status == .seeOther)
                #expect(corrected.headers[.location] == "\(location)?done=corrected")
                stored = try await PortalBroadcastTests.stored(hub)
                #expect(stored["title"] == "Library hours" && stored["desc"] == "Open until 8")
                try await eventually("the correction at FCM") {
                    MessageCorrectionTests.requests(fake, key).contains { $0.data["correction"] == "1" }
                }
                let correction = try #require(
                    MessageCorrectionTests.requests(fake, key).first { $0.data["correction"] == "1" })
                #expect(correction.data["title"] == "Library hours")
                #expect(try await ann.get("\(location)?done=corrected").text.contains("The correction is stored"))

                // Then withdraws it, with a reason: the phones are told, the page offers no more edits.
                let withdrawn = try await ann.post(
                    "/portal/messages/\(key)/withdraw",
                    ["_csrf": csrf, "reason": "Sent to the wrong list"])
                #expect(withdrawn.status == .seeOther)
                #expect(withdrawn.headers[.location] == "\(location)?done=withdrawn")
                try await eventually("the withdrawal at FCM") {
                    MessageCorrectionTests.requests(fake, key).contains { $0.data["withdrawn"] == "1" }
                }
                stored = try await PortalBroadcastTests.stored(hub)
                #expect(stored[path: "withdrawn.reason"] == "Sent to the wrong list")
                let after = try await ann.get("\(location)?done=withdrawn")
                #expect(after.text.contains("The message is withdrawn"))
                #expect(!after.text.contains(#"id="edit""#))
                #expect(try await ann.post("/portal/messages/\(key)/withdraw", ["_csrf": csrf]).status == .conflict)
            }
        }
    }
}

import DAO
import Foundation
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The portal's live reach report: the message page shows the report with its script, and the JSON the script polls
/// (GET /portal/messages/:msiKey/reach) follows the receipts as they arrive, for the message's sender only.
@Suite struct PortalReachTests {
    @Test func theMessagePageShowsTheReportAndItsJSONFollowsTheReceipts() async throws {
        let a = ReceiptTests.Handset("reach-a"), b = ReceiptTests.Handset("reach-b", platform: .ios)
        try await HubHarness.with(seed: { database in
            try await HubHarness.legacy(database)
            try await ReceiptTests.seed([a, b], topics: [ReceiptTests.hoursTopic], in: database)
        }) { hub in
            let sent = try await hub.request(
                .post, "/message", as: .basic("ann", HubHarness.annPassword),
                json:
                    #"{"title": "Closed", "desc": "Closed today", "message": "The library is closed today.", "topic_key": "\#(ReceiptTests.hoursTopic)", "distribution": "Alert"}"#
            )
            #expect(sent.status == .created, "\(sent.text)")
            let key = try #require(try sent.json()["msi_key"]?.stringValue)
            // Another sender's message, which ann may not see.
            let other = try await ReceiptTests.sendTopic(ReceiptTests.hoursTopic, on: hub)

            var browser = PortalBrowser(hub: hub)
            _ = try await browser.login("ann", HubHarness.annPassword)
            let page = try await browser.get("/portal/messages/\(key)")
            #expect(page.status == .ok)
            #expect(page.text.contains(#"data-reach-url="/portal/messages/\#(key)/reach""#))
            #expect(page.text.contains(#"<script src="/portal/static/reach.js" defer></script>"#))
            #expect(page.text.contains(#"<dd id="reach-audience">2</dd>"#))
            #expect(page.text.contains(#"<dd id="reach-acknowledged">0</dd>"#))

            _ = try await ReceiptTests.post(
                [
                    ReceiptTests.entry(key, "received"),
                    ReceiptTests.entry(key, "acknowledged", response: "Thanks"),
                ], as: a, on: hub)
            _ = try await ReceiptTests.post([ReceiptTests.entry(key, "received")], as: b, on: hub)
            let reach = try await browser.get("/portal/messages/\(key)/reach")
            #expect(reach.status == .ok)
            #expect(reach.headers[.contentType]?.hasPrefix("application/json") == true)
            let body = try reach.json()
            #expect(
                ["audience", "received", "acknowledged", "not_answered"].map { body[$0]?.int64Value } == [2, 2, 1, 1])
            // The message offered no responses: its free text is counted apart, never a field of the counts.
            #expect(body["responses"]?.documentValue?["Thanks"] == nil)
            #expect(body["free_text_responses"]?.int64Value == 1)
            let silent = body["not_answered_devices"]?.arrayValue?.compactMap {
                $0.documentValue?["device"]?.stringValue
            }
            #expect(silent == [b.id.hex])

            // Another sender's message is not found, in JSON; nobody logged in is sent to log in.
            let hidden = try await browser.get("/portal/messages/\(other)/reach")
            #expect(hidden.status == .notFound && hidden.errorCode == "message_not_found")
            #expect(try await browser.get("/portal/messages/zz/reach").status == .notFound)
            var anonymous = PortalBrowser(hub: hub)
            let refused = try await anonymous.get("/portal/messages/\(key)/reach")
            #expect(refused.status.code / 100 == 3 && refused.headers[.location]?.hasPrefix("/portal/login") == true)

            let script = try await browser.get("/portal/static/reach.js")
            #expect(script.status == .ok && script.text.contains("data-reach-url"))
        }
    }
}

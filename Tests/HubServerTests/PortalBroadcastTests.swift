import DAO
import FakeFCM
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The send form's fields beyond the texts, read as POST /message reads them (translations, poster, kind,
/// dismissible, expiry, display and data, urgency, acknowledgement), their refusals beside their fields, the message
/// page's facts, and its "Send again to those who have not answered" button.
@Suite struct PortalBroadcastTests {
    /// The Alert subject "Opening hours" of the legacy fixture, as the form chooses it.
    static let hours = [
        ("channel", Fixtures.Legacy.channelID.hex), ("area", Fixtures.Legacy.libraryID.hex),
        ("subject", Fixtures.Legacy.hoursID.hex),
    ]

    /// The legacy channel and a second communicator, "bea".
    static let seed: @Sendable (MongoDatabase) async throws -> Void = { database in
        try await HubHarness.legacy(database)
        try await HubServices(pool: try TestDatabase.sharedPool(), database: database, bcryptCost: 4)
            .accounts.addUser("bea", role: .communicator, password: "bea-password-1")
    }

    /// Logs `user` in and returns the send form's CSRF token.
    static func open(
        _ browser: inout PortalBrowser, as user: String = "ann",
        password: String = HubHarness.annPassword
    ) async throws -> (csrf: String, page: TestResponse) {
        _ = try await browser.login(user, password)
        let page = try await browser.get("/portal/send")
        return (try PortalBrowser.csrf(in: page), page)
    }

    /// The one stored message.
    static func stored(_ hub: HubHarness) async throws -> BSONDocument {
        try #require(try await hub.database.collection(CollectionName.message).findOne([:]))
    }

    @Test func aSendWithTwoTranslationsAPosterADowntimeKindAndAnExpiryStoresThem() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let (csrf, page) = try await Self.open(&browser)
            #expect(page.text.contains(#"id="translation-rows""#) && page.text.contains(#"name="tr_lang""#))
            #expect(page.text.contains(#"data-limit="2048""#))
            // The expiry as the script sends it: RFC 3339 with the browser's offset (here India's).
            let expiry = (UnixTime.nowMilliseconds() / 1000 + 86_400) * 1000
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(secondsFromGMT: 5 * 3600 + 1800)
            let expiresAt = formatter.string(from: Date(timeIntervalSince1970: Double(expiry) / 1000))
            #expect(expiresAt.hasSuffix("+05:30"))
            let sent = try await browser.post(
                "/portal/send",
                pairs: [("_csrf", csrf)] + Self.hours + [
                    ("title", "Closed today"), ("desc", "The library is closed"), ("message", "Back tomorrow at 9."),
                    ("lang", "en"),
                    ("tr_lang", "hi"), ("tr_title", "आज बंद"), ("tr_desc", "पुस्तकालय बंद है"), ("tr_message", "कल 9 बजे"),
                    ("tr_lang", "TA"), ("tr_title", "இன்று மூடல்"), ("tr_desc", "நூலகம் மூடப்பட்டுள்ளது"),
                    ("tr_message", ""),
                    ("tr_lang", ""), ("tr_title", ""), ("tr_desc", ""), ("tr_message", ""),  // a row left blank
                    ("image", "https://school.example/posters/closed.png"), ("kind", "downtime"), ("kind_own", ""),
                    ("dismissible", "false"), ("dismissible", "true"), ("expires_local", "2030-01-01T00:00"),
                    ("expires_at", expiresAt), ("display", "false"), ("display", "true"),
                    ("data_key", ""), ("data_value", ""), ("urgency", "active"),
                ])
            #expect(sent.status == .seeOther, "\(sent.text)")
            let message = try await Self.stored(hub)
            #expect(message["lang"] == "en")
            let translations = try #require(message["translations"]?.documentValue)
            #expect(translations.keys == ["hi", "ta"])
            #expect(translations[path: "hi.title"] == "आज बंद" && translations[path: "hi.desc"] == "पुस्तकालय बंद है")
            #expect(translations[path: "ta.title"] == "இன்று மூடல்" && translations[path: "ta.message"] == "")
            #expect(message["image"] == "https://school.example/posters/closed.png")
            #expect(message["kind"] == "downtime")
            #expect(message["expires_at"]?.int64Value == expiry)
            // Left at their defaults: stored as a message without them is.
            #expect(message["dismissible"] == nil && message["display"] == nil)
            #expect(message["data"]?.documentValue?.isEmpty != false)
            #expect(message["urgency"] == nil || message["urgency"] == "active")

            let detail = try await browser.get(try #require(sent.headers[.location]))
            #expect(detail.text.contains(#"id="sent-languages">en (the texts above), hi, ta<"#))
            #expect(detail.text.contains(#"id="sent-image">https://school.example/posters/closed.png<"#))
            #expect(detail.text.contains(#"id="sent-kind">downtime (a banner the app shows at launch"#))
            #expect(detail.text.contains(#"id="sent-expires">\#(PortalTime.text(milliseconds: expiry))<"#))
            #expect(!detail.text.contains(#"id="acknowledgement""#))
        }
    }

    @Test func aBadPosterAndKindComeBackBesideTheirFieldsWithTheFormRefilled() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let (csrf, _) = try await Self.open(&browser)
            let refused = try await browser.post(
                "/portal/send",
                pairs: [("_csrf", csrf)] + Self.hours + [
                    ("title", "Closed"), ("desc", "Closed today"), ("message", "Back tomorrow."),
                    ("tr_lang", "hi"), ("tr_title", "बंद"), ("tr_desc", "आज बंद"), ("tr_message", ""),
                    ("image", "http://school.example/poster.png"), ("kind", "own"), ("kind_own", "Bad Kind!"),
                ])
            #expect(refused.status == .unprocessableContent)
            #expect(
                refused.text.contains(
                    #"<p class="field-error" id="image-error">the field &quot;image&quot; must be an https URL"#))
            #expect(refused.text.contains(#"id="kind-error""#))
            #expect(!refused.text.contains(#"id="translations-error""#))
            // Refilled: the poster, the kind of its own and the translation row.
            #expect(refused.text.contains(#"value="http://school.example/poster.png""#))
            #expect(refused.text.contains(#"value="Bad Kind!""#))
            #expect(refused.text.contains(#"<option value="own" selected>"#))
            #expect(
                refused.text.contains(
                    #"name="tr_lang" type="text" class="short" list="language-codes" maxlength="3" value="hi""#))
            #expect(refused.text.contains(#"value="बंद""#))
            // A translation of an Alert without its notification text: HubCore's rule, beside the translations.
            let missing = try await browser.post(
                "/portal/send",
                pairs: [("_csrf", csrf)] + Self.hours + [
                    ("title", "Closed"), ("desc", "Closed today"), ("message", "Back tomorrow."),
                    ("tr_lang", "hi"), ("tr_title", "बंद"), ("tr_desc", ""), ("tr_message", ""),
                ])
            #expect(missing.status == .unprocessableContent)
            #expect(
                missing.text.contains(
                    #"id="translations-error">the translation &quot;hi&quot; needs its &quot;desc&quot;"#))
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func aNonDisplaySendNeedsDataAndStoresIt() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let (csrf, _) = try await Self.open(&browser)
            let base =
                [("_csrf", csrf)] + Self.hours + [
                    ("title", "Feature switch"), ("desc", "unused"), ("message", "Turns the new timetable on."),
                    ("display", "false"),
                ]
            let refused = try await browser.post("/portal/send", pairs: base)
            #expect(refused.status == .unprocessableContent)
            #expect(
                refused.text.contains(
                    #"id="display-error">a message with &quot;display&quot;: false carries a &quot;data&quot; object"#))
            #expect(refused.text.contains(#"id="display" name="display" value="true" data-bytes>"#))  // unticked

            // The expiry typed without the script: read as UTC.
            let expiry = (UnixTime.nowMilliseconds() / 60_000 + 2 * 24 * 60) * 60_000
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withFullDate, .withTime, .withDashSeparatorInDate, .withColonSeparatorInTime]
            let local = String(formatter.string(from: Date(timeIntervalSince1970: Double(expiry) / 1000)).prefix(16))
            let sent = try await browser.post(
                "/portal/send",
                pairs: base + [
                    ("data_key", "timetable_v2"), ("data_value", "on"), ("data_key", "cohort_note"),
                    ("data_value", "b"),
                    ("data_key", ""), ("data_value", ""), ("expires_local", local), ("expires_at", ""),
                ])
            #expect(sent.status == .seeOther, "\(sent.text)")
            let message = try await Self.stored(hub)
            #expect(message["display"] == false)
            let data = try #require(message["data"]?.documentValue)
            #expect(data.count == 2 && data["timetable_v2"] == "on" && data["cohort_note"] == "b")
            #expect(message["expires_at"]?.int64Value == expiry)
            let detail = try await browser.get(try #require(sent.headers[.location]))
            #expect(detail.text.contains(#"id="sent-display">No: a background data message for the app<"#))
            #expect(detail.text.contains(#"id="sent-data">cohort_note = b; timetable_v2 = on<"#))
        }
    }

    @Test func urgencyAndAnAcknowledgementAreStoredAndShown() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var browser = PortalBrowser(hub: hub)
            let (csrf, page) = try await Self.open(&browser)
            #expect(page.text.contains(#"<option value="active" selected>active</option>"#))
            let base =
                [("_csrf", csrf)] + Self.hours + [
                    ("title", "Are you safe?"), ("desc", "Answer now"),
                    ("message", "Tell us you are safe."),
                ]
            let refused = try await browser.post(
                "/portal/send",
                pairs: base + [
                    ("urgency", "loud"), ("ack", "on"), ("ack_responses", "Yes\nYes"), ("ack_within_min", "10"),
                ])
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text.contains(#"id="urgency-error">the field &quot;urgency&quot; must be one of"#))
            #expect(refused.text.contains(#"id="ack-error">the field &quot;ack&quot; has each response once"#))
            #expect(refused.text.contains(#"id="ack" name="ack" value="on" data-bytes checked>"#))

            let sent = try await browser.post(
                "/portal/send",
                pairs: base + [
                    ("urgency", "time-sensitive"), ("ack", "on"), ("ack_responses", "I'm safe\r\n\r\nI need help\r\n"),
                    ("ack_within_min", "10"), ("ack_resend", "2"),
                ])
            #expect(sent.status == .seeOther, "\(sent.text)")
            let message = try await Self.stored(hub)
            #expect(message["urgency"] == "time-sensitive")
            #expect(message[path: "ack.responses"] == ["I'm safe", "I need help"])
            #expect(message[path: "ack.within_s"]?.int64Value == 600 && message[path: "ack.resend"]?.int64Value == 2)
            let detail = try await browser.get(try #require(sent.headers[.location]))
            #expect(detail.text.contains(#"id="sent-urgency">time-sensitive<"#))
            #expect(detail.text.contains(#"id="ack-asked">Within 10 minutes, sent again up to 2 times"#))
            #expect(detail.text.contains(#"id="ack-responses">I&#39;m safe | I need help<"#))
        }
    }

    @Test func theResendButtonBringsTheNextRoundForwardForItsSenderOnlyWithinTheResendCount() async throws {
        let phones = [ReceiptTests.Handset("portal-resend-0"), ReceiptTests.Handset("portal-resend-1")]
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: { database in
                    try await Self.seed(database)
                    try await ReceiptTests.seed(phones, topics: [Fixtures.Legacy.hoursTopic], in: database)
                }, relay: try FanOutTests.relay(to: fake)
            ) { hub in
                var ann = PortalBrowser(hub: hub)
                let (csrf, _) = try await Self.open(&ann)
                // Ten minutes to answer: without the button nobody is reminded during this test.
                let sent = try await ann.post(
                    "/portal/send",
                    pairs: [("_csrf", csrf)] + Self.hours + [
                        ("title", "Are you safe?"), ("desc", "Answer now"), ("message", "Tell us you are safe."),
                        ("ack", "on"), ("ack_within_min", "10"), ("ack_resend", "2"),
                    ])
                #expect(sent.status == .seeOther, "\(sent.text)")
                let location = try #require(sent.headers[.location])
                let key = String(location.split(separator: "/").last ?? "")
                try await eventually("the audience is fixed") {
                    try await AcknowledgementTests.stored(key, in: hub.database)[path: "ack.next_at"] != nil
                }
                let page = try await ann.get(location)
                #expect(page.text.contains(#"id="ack-state">0 of 2 re-sends made; the next at"#))
                #expect(page.text.contains(#"<form method="post" action="/portal/messages/\#(key)/resend""#))

                // Another communicator may not, nor a form without its token.
                var bea = PortalBrowser(hub: hub)
                let beaCSRF = try await Self.open(&bea, as: "bea", password: "bea-password-1").csrf
                #expect(try await bea.post("/portal/messages/\(key)/resend", ["_csrf": beaCSRF]).status == .notFound)
                #expect(try await ann.post("/portal/messages/\(key)/resend", [:]).status == .forbidden)
                #expect(
                    try await AcknowledgementTests.stored(key, in: hub.database)[path: "ack.round"]?.int64Value
                        == 0)

                for round in 1...2 {
                    let resent = try await ann.post("/portal/messages/\(key)/resend", ["_csrf": csrf])
                    #expect(resent.status == .seeOther)
                    #expect(resent.headers[.location] == "\(location)?done=resend")
                    // The escalation worker takes the round at once, not ten minutes on: each phone gets it by token.
                    try await eventually("round \(round) is made") {
                        let stored = try await AcknowledgementTests.stored(key, in: hub.database)
                        return stored[path: "ack.round"]?.int64Value == Int64(round)
                    }
                    for phone in phones {
                        let reminders = AcknowledgementTests.requests(to: phone.token, fake)
                            .filter { $0["notification"] != nil }
                        #expect(reminders.count == round)
                    }
                }
                let shown = try await ann.get("\(location)?done=resend")
                #expect(shown.text.contains("The message goes again, within moments"))
                #expect(shown.text.contains(#"id="ack-state">All 2 re-sends were made"#))
                #expect(!shown.text.contains(#"id="resend-silent""#))
                // Past the resend count: 409, and nothing more is due.
                let refused = try await ann.post("/portal/messages/\(key)/resend", ["_csrf": csrf])
                #expect(refused.status == .conflict)
                #expect(refused.text.contains("Every re-send this message asked for (2) was made."))
                #expect(
                    try await AcknowledgementTests.stored(key, in: hub.database)[path: "ack.round"]?.int64Value
                        == 2)
            }
        }
    }

    @Test func theResendButtonIsRefusedForAMessageWithoutAcknowledgementOrOneNotSent() async throws {
        try await HubHarness.with(seed: Self.seed) { hub in
            var ann = PortalBrowser(hub: hub)
            let (csrf, _) = try await Self.open(&ann)
            // Scheduled a day ahead: asked for an acknowledgement, not sent yet.
            let annCaller = HubHarness.Caller.basic("ann", HubHarness.annPassword)
            let scheduled = try await hub.request(
                .post, "/message", as: annCaller,
                json: """
                    {"title": "Trip", "desc": "Trip tomorrow", "message": "Bring lunch.", "distribution": "Alert",
                     "topic_key": "\(Fixtures.Legacy.hoursTopic)", "send_at": \(UnixTime.nowMilliseconds() + 86_400_000),
                     "ack": {"within_s": 600, "resend": 1}}
                    """)
            #expect(scheduled.status == .created, "\(scheduled.text)")
            let scheduledKey = try #require(try scheduled.json()["msi_key"]?.stringValue)
            let notSent = try await ann.post("/portal/messages/\(scheduledKey)/resend", ["_csrf": csrf])
            #expect(notSent.status == .conflict && notSent.text.contains("This message is not sent yet"))
            let page = try await ann.get("/portal/messages/\(scheduledKey)")
            #expect(page.text.contains(#"id="ack-state">Not sent yet.<"#))

            let plain = try await hub.request(
                .post, "/message", as: annCaller,
                json: """
                    {"title": "Hours", "desc": "New hours", "message": "Open till 8.", "distribution": "Alert",
                     "topic_key": "\(Fixtures.Legacy.hoursTopic)"}
                    """)
            let plainKey = try #require(try plain.json()["msi_key"]?.stringValue)
            let refused = try await ann.post("/portal/messages/\(plainKey)/resend", ["_csrf": csrf])
            #expect(refused.status == .conflict && refused.text.contains("did not ask for an acknowledgement"))
        }
    }
}

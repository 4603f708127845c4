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

/// A person's settings follow them (issue 45's first part): set from one device, they reach the person's other
/// devices and one bound later; a PUT changes what it names; a Forced subject cannot be turned off; bad input and an
/// unbound device are refused and change nothing.
@Suite struct PersonSettingsTests {
    /// Registers and binds a phone to `person`.
    static func boundPhone(_ token: String, to person: String, on hub: HubHarness) async throws -> Phone {
        let phone = try await hub.register(token)
        let assertion = try await AssertionSigner.hmac(PersonBindingTests.secret)
            .sign(AssertionSigner.claims(sub: person))
        #expect(try await hub.bind(phone, assertion).status == .ok)
        return phone
    }

    static func settings(_ phone: Phone, on hub: HubHarness) async throws -> BSONDocument {
        try await hub.request(.get, "/device/\(phone.deviceID)/person/settings", as: .token(phone.secret)).json()
    }

    static func put(_ json: String, _ phone: Phone, on hub: HubHarness) async throws -> TestResponse {
        try await hub.request(.put, "/device/\(phone.deviceID)/person/settings", as: .token(phone.secret), json: json)
    }

    static func device(_ phone: Phone, on hub: HubHarness) async throws -> BSONDocument {
        try await hub.request(.get, "/device/\(phone.deviceID)", as: .token(phone.secret)).json()
    }

    @Test func settingsFromOneDeviceReachTheOthersAndOneBoundLater() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, persons: try PersonBindingTests.persons()) { hub in
            let phone = try await Self.boundPhone("settings-phone", to: "student-7", on: hub)
            let tablet = try await Self.boundPhone("settings-tablet", to: "student-7", on: hub)
            let empty = try await Self.settings(phone, on: hub)
            #expect(empty["quiet_hours"] == .null && empty["locale"] == .null && empty["person"] == "student-7")
            let changed = try await Self.put(
                #"""
                {"quiet_hours": {"from": "21:30", "to": "06:45", "tz": "Europe/Berlin"}, "locale": "de",
                 "delivery": {"subjects": {"\#(RelayOutboxTests.booksTopic)": "digest"}}}
                """#, phone, on: hub)
            #expect(changed.status == .ok, "\(changed.text)")
            #expect(try changed.json()[path: "delivery.subjects.\(RelayOutboxTests.booksTopic)"] == "digest")
            // Both devices now have the person's quiet hours and language.
            for each in [phone, tablet] {
                let device = try await Self.device(each, on: hub)
                #expect(
                    device[path: "quiet_hours.from"] == "21:30" && device[path: "quiet_hours.tz"] == "Europe/Berlin")
                #expect(device["locale"] == "de")
            }
            // The tablet reads the same settings; a PUT naming the locale alone leaves the rest.
            #expect(try await Self.settings(tablet, on: hub)[path: "quiet_hours.to"] == "06:45")
            #expect(try await Self.put(#"{"locale": "fr"}"#, tablet, on: hub).status == .ok)
            let after = try await Self.settings(phone, on: hub)
            #expect(after["locale"] == "fr" && after[path: "quiet_hours.from"] == "21:30")
            #expect(after[path: "delivery.subjects.\(RelayOutboxTests.booksTopic)"] == "digest")
            // A phone bound later gets them at bind.
            let later = try await Self.boundPhone("settings-new-phone", to: "student-7", on: hub)
            let device = try await Self.device(later, on: hub)
            #expect(device[path: "quiet_hours.from"] == "21:30" && device["locale"] == "fr")
            // Instant removes a choice; null clears the quiet hours (the devices keep theirs).
            let cleared = try await Self.put(
                #"{"quiet_hours": null, "delivery": {"subjects": {"\#(RelayOutboxTests.booksTopic)": "instant"}}}"#,
                phone, on: hub)
            #expect(try cleared.json()["quiet_hours"] == .null)
            #expect(try cleared.json()[path: "delivery.subjects"] == .document([:]))
            // Another person's device sees nothing of it.
            let other = try await Self.boundPhone("settings-other", to: "student-8", on: hub)
            #expect(try await Self.settings(other, on: hub)["locale"] == .null)
        }
    }

    @Test func aForcedSubjectCannotBeOffAndBadInputChangesNothing() async throws {
        try await HubHarness.with(seed: HubHarness.legacy, persons: try PersonBindingTests.persons()) { hub in
            let phone = try await Self.boundPhone("settings-refused", to: "student-9", on: hub)
            #expect(try await Self.put(#"{"locale": "nl"}"#, phone, on: hub).status == .ok)
            let refusals: [(String, HTTPResponse.Status, String)] = [
                (
                    #"{"delivery": {"subjects": {"\#(ReceiptTests.hoursTopic)": "off"}}}"#, .conflict,
                    "forced_subscription"
                ),
                (#"{"delivery": {"subjects": {"0-0-0": "digest"}}}"#, .notFound, "topic_not_found"),
                (#"{"delivery": {"groups": {"no-such-group": "off"}}}"#, .notFound, "group_not_found"),
                (
                    #"{"delivery": {"subjects": {"\#(RelayOutboxTests.booksTopic)": "sometimes"}}}"#,
                    .unprocessableContent, "invalid_settings"
                ),
                (#"{"locale": "de", "volume": 11}"#, .unprocessableContent, "invalid_settings"),
                (#"{"locale": "d e"}"#, .unprocessableContent, "invalid_settings"),
                (#"{"digest_hour": "25:00"}"#, .unprocessableContent, "invalid_settings"),
                (
                    #"{"quiet_hours": {"from": "22:00", "to": "07:00", "tz": "CEST"}}"#, .unprocessableContent,
                    "invalid_quiet_hours"
                ),
            ]
            for (body, status, code) in refusals {
                let refused = try await Self.put(body, phone, on: hub)
                #expect(refused.status == status && refused.errorCode == code, "\(body): \(refused.text)")
            }
            // A Forced subject in digest is allowed (its Alerts still come at once, issue 45's second part).
            #expect(
                try await Self.put(
                    #"{"delivery": {"subjects": {"\#(ReceiptTests.hoursTopic)": "digest"}}}"#, phone, on: hub
                )
                .status == .ok)
            let settings = try await Self.settings(phone, on: hub)
            #expect(settings["locale"] == "nl")
            #expect(settings[path: "delivery.subjects"] == ["\(ReceiptTests.hoursTopic)": "digest"])
            // A device bound to nobody has no person's settings; another device's secret is refused.
            let loose = try await hub.register("settings-loose")
            let unbound = try await hub.request(
                .get, "/device/\(loose.deviceID)/person/settings", as: .token(loose.secret))
            #expect(unbound.status == .conflict && unbound.errorCode == "not_bound")
            let foreign = try await hub.request(
                .put, "/device/\(phone.deviceID)/person/settings", as: .token(loose.secret), json: #"{"locale": "it"}"#)
            #expect(foreign.status == .unauthorized)
            #expect(try await Self.settings(phone, on: hub)["locale"] == "nl")
        }
    }

    @Test func aGroupTurnedOffReachesThePersonsDevicesInTheBackgroundAndCatchUpStillHasIt() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: RoomTests.seed, relay: try FanOutTests.relay(to: fake)) { hub in
                let phone = RoomTests.annPhone, tablet = RoomTests.annTablet
                let off = try await hub.request(
                    .put, "/device/\(phone.id.hex)/person/settings", as: .token(phone.secret),
                    json: #"{"delivery": {"groups": {"notices": "off"}}}"#)
                #expect(off.status == .ok, "\(off.text)")
                /// A staff message to `notices` at `urgency`, sent; its msi_key.
                func send(_ title: String, urgency: String) async throws -> String {
                    let sent = try await hub.request(
                        .post, "/message", as: .admin,
                        json: #"""
                            {"title": "\#(title)", "desc": "\#(title)", "message": "More.", "distribution": "Alert",
                             "urgency": "\#(urgency)", "to": {"groups": ["notices"]}}
                            """#)
                    let key = try #require(try sent.json()["msi_key"]?.stringValue)
                    try await FanOutTests.waitUntilSent(
                        try await RoomTests.stored(key, in: hub.database), in: hub.database)
                    return key
                }
                let quiet = try await send("Lost and found", urgency: "active")
                // Ann's devices: data alone in the background; Ben's: the notification.
                for handset in [phone, tablet] {
                    let requests = AcknowledgementTests.requests(to: handset.token, fake).filter {
                        ($0["data"] as? [String: String])?["msi_key"] == quiet
                    }
                    #expect(requests.count == 1 && requests.first?["notification"] == nil, "\(handset.token)")
                    #expect((requests.first?["data"] as? [String: String])?["muted"] == "1")
                }
                let toBen = AcknowledgementTests.requests(to: RoomTests.benPhone.token, fake).filter {
                    ($0["data"] as? [String: String])?["msi_key"] == quiet
                }
                #expect(toBen.count == 1 && toBen.first?["notification"] != nil)
                // Catch-up still has it.
                let missed = try await hub.request(
                    .get, "/device/\(tablet.id.hex)/messages?since=0", as: .token(tablet.secret)
                ).json()
                let keys = missed["messages"]?.arrayValue?.compactMap { $0.documentValue?["msi_key"]?.stringValue }
                #expect(keys?.contains(quiet) == true)
                // A critical message sounds all the same.
                let critical = try await send("Evacuate", urgency: "critical")
                let criticalToAnn = AcknowledgementTests.requests(to: phone.token, fake).filter {
                    ($0["data"] as? [String: String])?["msi_key"] == critical
                }
                #expect(criticalToAnn.count == 1 && criticalToAnn.first?["notification"] != nil)
            }
        }
    }
}

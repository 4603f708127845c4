import DAO
import FakeFCM
import Foundation
import HubTime
import HTTPTypes
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// PUT and DELETE /message/:msiKey: a correction replaces what the phones show (the same Android `tag` and
/// `apns-collapse-id` as the original), a withdrawal tells the apps to remove the message and takes it out of
/// catch-up and the active banners, a scheduled message withdrawn is never sent; against a real hub, database and
/// the fake FCM.
@Suite("Corrections and withdrawals")
struct MessageCorrectionTests {
    /// The requests the fake received for the message `key`.
    static func requests(_ fake: FakeFCM, _ key: String) -> [FakeFCMRequest] {
        fake.received.filter { $0.data["msi_key"] == key }
    }

    /// The Android `tag` and APNs `apns-collapse-id` of a request with a notification.
    static func identity(_ request: FakeFCMRequest) -> (tag: String?, collapse: String?) {
        let android = request.message["android"] as? [String: Any]
        let notification = android?["notification"] as? [String: Any]
        let headers = (request.message["apns"] as? [String: Any])?["headers"] as? [String: String]
        return (notification?["tag"] as? String, headers?["apns-collapse-id"])
    }

    /// The msi_key of a POST /message answer.
    static func key(_ response: TestResponse) throws -> String {
        try #require(try response.json()["msi_key"]?.stringValue, "\(response.text)")
    }

    /// Corrects the message `key` with `body` as `caller`: taken at any moment, even while the relay sends it.
    static func correct(_ hub: HubHarness, _ key: String, as caller: HubHarness.Caller, _ body: String) async throws {
        let answer = try await hub.request(.put, "/message/\(key)", as: caller, json: body)
        #expect(answer.status == .ok, "\(answer.text)")
    }

    @Test func aTopicCorrectionReplacesTheNotificationUnderTheSameTagAndOthersMayNotChangeIt() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let sent = try await hub.request(.post, "/message", as: .admin, json: RelayOutboxTests.alert("Libary"))
                #expect(sent.status == .created)
                let key = try Self.key(sent)
                try await eventually("the original reached FCM") {
                    Self.requests(fake, key).contains { $0.message["notification"] != nil }
                }
                let original = try #require(Self.requests(fake, key).first { $0.message["notification"] != nil })
                #expect(Self.identity(original).tag == key && Self.identity(original).collapse == key)

                // Another sender may neither correct nor withdraw it; an unknown key is 404.
                let other = try await hub.request(
                    .put, "/message/\(key)", as: .communicator, json: #"{"title": "Mine"}"#)
                #expect(other.status == .forbidden)
                #expect(try await hub.request(.delete, "/message/\(key)", as: .communicator).status == .forbidden)
                #expect(
                    try await hub.request(
                        .put, "/message/\(ObjectID().hex)", as: .admin,
                        json: #"{"title": "x"}"#
                    ).status == .notFound)
                // The send rules of POST /message: an Alert's desc is its pop-up's body.
                #expect(
                    try await hub.request(
                        .put, "/message/\(key)", as: .admin,
                        json: #"{"desc": ""}"#
                    ).status == .unprocessableContent)

                try await Self.correct(hub, key, as: .admin, #"{"title": "Library"}"#)
                try await eventually("the correction reached FCM") {
                    Self.requests(fake, key).contains { $0.data["correction"] == "1" }
                }
                let correction = try #require(Self.requests(fake, key).first { $0.data["correction"] == "1" })
                #expect(Self.identity(correction).tag == key && Self.identity(correction).collapse == key)
                #expect(
                    correction.data["title"] == "Library"
                        && correction.data["message"] == "The library is closed all day.")
                #expect((correction.message["notification"] as? [String: Any])?["title"] as? String == "Library")
                #expect(correction.message["topic"] as? String == Legacy.hoursTopic)
                // Sent once: the original's components are not sent again.
                #expect(Self.requests(fake, key).count == 3)

                let stored = try await hub.request(.get, "/message/\(key)", as: .admin).json()
                #expect(stored["title"]?.stringValue == "Library")
                let record = try #require(stored["corrections"]?.arrayValue?.first?.documentValue)
                #expect(
                    record[path: "before.title"]?.stringValue == "Libary" && record["by"]?.stringValue == "admin-script"
                )
                // The audit log has who corrected what.
                let entry = try await hub.database.collection(CollectionName.audit).findOne([
                    "action": "message.correct"
                ])
                #expect(entry?[path: "target.id"]?.stringValue == key)
                #expect(entry?[path: "change.after.title"]?.stringValue == "Library")
                let public_ = try await hub.request(.get, "/message/\(key)").json()
                #expect(public_["title"]?.stringValue == "Library" && public_["corrections"] == nil)
            }
        }
    }

    @Test func aTranslatedTopicAlertsCorrectionReplacesEachPhonesPopUpInTheLanguageItShowed() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let phones: [(token: String, locale: String?)] = [
                    ("phone-en", "en"), ("phone-hi", "hi-IN"), ("phone-none", nil),
                ]
                for (token, locale) in phones {
                    #expect(try await hub.register(token, locale: locale).status == .created)
                }
                fake.forceSubscribe("app-self", to: DeviceTests.forced)
                try await eventually("phone-hi on its language topic") {
                    fake.languageTopics(of: "phone-hi") == ["lang-hi"]
                }
                for (token, _) in phones {
                    try await eventually("\(token) on the subject") {
                        fake.subscriptions(of: token).contains(DeviceTests.forced)
                    }
                }
                let tokens = phones.map(\.token) + ["app-self"]
                let key = try await hub.post(
                    RelayOutboxTests.alert(
                        "Closed", extra: #", "translations": {"hi": {"title": "बंद", "desc": "d-hi"}}"#)
                ).hex
                try await eventually("the message is sent") { try await hub.relayState(ObjectID(hex: key)!) == "sent" }
                for token in tokens { _ = fake.drainInbox(token) }
                let before = Self.requests(fake, key).count

                try await Self.correct(
                    hub, key, as: .admin,
                    #"{"title": "Closed today", "translations": {"hi": {"title": "आज बंद", "desc": "d-hi"}}}"#)
                try await eventually("the correction reached FCM") { Self.requests(fake, key).count >= before + 2 }
                try await eventually("the correction is recorded") {
                    try await hub.relayState(ObjectID(hex: key)!) == "sent"
                }
                var shown: [String: [String]] = [:]
                for token in tokens {
                    let received = fake.drainInbox(token)
                    #expect(received.allSatisfy { $0.data["correction"] == "1" }, "\(token)")
                    shown[token] = received.compactMap { $0.notification?.title }
                }
                // Each phone's pop-up is replaced once, in the language the original showed; one request a language.
                #expect(
                    shown == [
                        "phone-en": ["Closed today"], "phone-hi": ["आज बंद"], "phone-none": ["Closed today"],
                        "app-self": ["Closed today"],
                    ])
                let corrections = Self.requests(fake, key).dropFirst(before)
                #expect(corrections.count == 2)
                #expect(corrections.allSatisfy { Self.identity($0).tag == key && Self.identity($0).collapse == key })
            }
        }
    }

    @Test func aCorrectionOfAMessageToAPersonReachesTheDevicesItReached() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: PersonMessageTests.seed, relay: try RelayOutboxTests.relay(to: fake),
                persons: try PersonBindingTests.persons()
            ) { hub in
                let signer = await AssertionSigner.hmac(PersonBindingTests.secret)
                let phone = try await hub.register("student-phone")
                #expect(
                    try await hub.bind(phone, try await signer.sign(AssertionSigner.claims(sub: "student-1"))).status
                        == .ok)
                let sent = try await hub.request(
                    .post, "/message", as: .token(PersonMessageTests.directToken),
                    json:
                        PersonMessageTests.body(to: #"{"persons": ["student-1"]}"#, distribution: "Alert"))
                let key = try Self.key(sent)
                try await eventually("the original reached the phone") { !Self.requests(fake, key).isEmpty }
                #expect(Self.identity(Self.requests(fake, key)[0]).tag == key)

                #expect(
                    try await hub.request(
                        .put, "/message/\(key)", as: .communicator,
                        json: #"{"desc": "x"}"#
                    ).status == .forbidden)
                try await Self.correct(
                    hub, key, as: .token(PersonMessageTests.directToken),
                    #"{"desc": "Your fees are due on Monday"}"#)
                try await eventually("the correction reached the phone") {
                    Self.requests(fake, key).contains { $0.data["correction"] == "1" }
                }
                let correction = try #require(Self.requests(fake, key).first { $0.data["correction"] == "1" })
                #expect(correction.message["token"] as? String == "student-phone")
                #expect(Self.identity(correction).tag == key && Self.identity(correction).collapse == key)
                #expect(correction.data["desc"] == "Your fees are due on Monday")

                // Withdrawn: the phone gets a data message by token, and its catch-up no longer has it.
                try await eventually("the withdrawal was taken") {
                    let answer = try await hub.request(
                        .delete, "/message/\(key)", as: .token(PersonMessageTests.directToken))
                    return answer.status == .ok
                }
                try await eventually("the withdrawal reached the phone") {
                    Self.requests(fake, key).contains { $0.data["withdrawn"] == "1" }
                }
                let withdrawal = try #require(Self.requests(fake, key).first { $0.data["withdrawn"] == "1" })
                #expect(
                    withdrawal.message["token"] as? String == "student-phone"
                        && withdrawal.message["notification"] == nil)
                let caughtUp = try await hub.request(
                    .get, "/device/\(phone.deviceID)/messages?since=0", as: .token(phone.secret))
                #expect(!caughtUp.text.contains(key), "\(caughtUp.text)")
            }
        }
    }

    @Test func aWithdrawnBannerLeavesCatchUpAndTheActiveListAndHistoryKeepsATombstone() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let phone = try await hub.register("banner-phone")
                let sent = try await hub.request(
                    .post, "/message", as: .communicator,
                    json: BroadcastRouteTests.banner(
                        "School closed", extra: #", "kind": "downtime""#))
                #expect(sent.status == .created)
                let key = try Self.key(sent)
                try await eventually("the banner reached FCM") { !Self.requests(fake, key).isEmpty }
                let active = "/broadcasts/active?topic_key=\(DeviceTests.forced)"
                let catchUp = "/device/\(phone.deviceID)/messages?since=0"
                func keys(_ uri: String, _ field: String, as caller: HubHarness.Caller = .anonymous) async throws
                    -> [String]
                {
                    try await hub.request(.get, uri, as: caller).json()[field]?.arrayValue?
                        .compactMap { $0.documentValue?["msi_key"]?.stringValue } ?? []
                }
                #expect(try await keys(active, "broadcasts").contains(key))
                #expect(try await keys(catchUp, "messages", as: .token(phone.secret)).contains(key))

                // Taken at any moment, even while the relay sends the banner.
                let answer = try await hub.request(
                    .delete, "/message/\(key)?reason=Sent%20by%20mistake",
                    as: .communicator)
                #expect(answer.status == .ok, "\(answer.text)")
                try await eventually("the withdrawal reached FCM") {
                    Self.requests(fake, key).contains { $0.data["withdrawn"] == "1" }
                }
                let notice = try #require(Self.requests(fake, key).first { $0.data["withdrawn"] == "1" })
                #expect(notice.message["notification"] == nil)
                #expect((notice.message["android"] as? [String: Any])?["notification"] == nil)
                let headers = (notice.message["apns"] as? [String: Any])?["headers"] as? [String: String]
                #expect(headers?["apns-push-type"] == "background")

                #expect(try await !keys(active, "broadcasts").contains(key))
                #expect(try await !keys(catchUp, "messages", as: .token(phone.secret)).contains(key))
                let history = try await hub.request(.get, "/message?topic_key=\(DeviceTests.forced)").json()
                let tombstone = try #require(
                    history["messages"]?.arrayValue?.compactMap(\.documentValue)
                        .first { $0["msi_key"]?.stringValue == key })
                #expect(tombstone["title"] == nil && tombstone["message"] == nil)
                #expect(tombstone[path: "withdrawn.reason"]?.stringValue == "Sent by mistake")
                #expect(tombstone[path: "withdrawn.by"]?.stringValue == "bulletin-bot")
                // Its sender still sees it whole; nothing more can be done with it.
                #expect(
                    try await hub.request(.get, "/message/\(key)", as: .communicator).json()["title"]?.stringValue
                        == "School closed")
                let again = try await hub.request(.put, "/message/\(key)", as: .communicator, json: #"{"title": "x"}"#)
                #expect(again.status == .conflict && again.errorCode == "message_withdrawn")
                let entry = try await hub.database.collection(CollectionName.audit).findOne([
                    "action": "message.withdraw"
                ])
                #expect(entry?[path: "change.after.reason"]?.stringValue == "Sent by mistake")
            }
        }
    }

    @Test func aScheduledMessageWithdrawnBeforeItsTimeIsNeverSent() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                // Far enough ahead that a loaded machine withdraws it before its time.
                let sendAt = UnixTime.nowMilliseconds() + 8_000
                let scheduled = try await hub.request(
                    .post, "/message", as: .admin,
                    json: RelayOutboxTests.alert("Cancelled", extra: #", "send_at": \#(sendAt)"#))
                let key = try Self.key(scheduled)
                let withdrawn = try await hub.request(
                    .delete, "/message/\(key)", as: .admin,
                    json: #"{"reason": "Not today"}"#)
                #expect(withdrawn.status == .ok, "\(withdrawn.text)")
                #expect(try withdrawn.json()[path: "relay.state"]?.stringValue == "withdrawn")
                // A later message, due after it, reaches FCM: the relay passed the withdrawn one's time.
                let later = try await hub.request(
                    .post, "/message", as: .admin,
                    json: RelayOutboxTests.alert("Later", extra: #", "send_at": \#(sendAt + 500)"#))
                let laterKey = try Self.key(later)
                try await eventually("the later message was sent") { !Self.requests(fake, laterKey).isEmpty }
                #expect(Self.requests(fake, key).isEmpty)
                #expect(
                    try await hub.database.collection(CollectionName.message)
                        .findOne(["msi_key": .objectID(try #require(ObjectID(hex: key)))])?[path: "relay.state"]?
                        .stringValue
                        == "withdrawn")
            }
        }
    }

    /// A translated Alert (three requests: Hindi, French, and the rest), one after the other.
    static let translatedAlert = RelayOutboxTests.alert(
        "Closed",
        extra: #", "translations": {"hi": {"title": "बंद", "desc": "d-hi"}, "fr": {"title": "Fermé", "desc": "d-fr"}}"#)

    /// The requests for `key` that carry the message itself (neither a correction nor a withdrawal).
    static func originals(_ fake: FakeFCM, _ key: String) -> [FakeFCMRequest] {
        requests(fake, key).filter { $0.data["correction"] == nil && $0.data["withdrawn"] == nil }
    }

    @Test func aTopicMessageCorrectedWhileItsComponentsAreSentSendsTheRestCorrectedAndCorrectsWhatWent() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                // FCM answers slowly: the correction lands while the other components are still to go.
                fake.setResponseDelay(.milliseconds(1500))
                let key = try await hub.post(Self.translatedAlert).hex
                try await eventually("the first component reached FCM") { !Self.requests(fake, key).isEmpty }
                let answer = try await hub.request(
                    .put, "/message/\(key)", as: .admin, json: #"{"title": "Closed today"}"#)
                let answeredAt = Date()
                #expect(answer.status == .ok, "\(answer.text)")
                try await eventually("the message is sent", within: .seconds(30)) {
                    try await hub.relayState(ObjectID(hex: key)!) == "sent"
                }
                fake.setResponseDelay(nil)
                let originals = Self.originals(fake, key)
                // The main language's request, once: corrected when it went after the PUT answered (as it does but
                // on a machine that took more than a second to answer).
                let main = originals.filter { ["Closed", "Closed today"].contains($0.data["title"]) }
                #expect(main.count == 1, "\(originals.map(\.data))")
                #expect(main.allSatisfy { $0.receivedAt < answeredAt || $0.data["title"] == "Closed today" })
                #expect(originals.filter { $0.receivedAt > answeredAt }.allSatisfy { $0.data["title"] != "Closed" })
                // What went before it is corrected under the same tag.
                let corrections = Self.requests(fake, key).filter { $0.data["correction"] == "1" }
                #expect(!corrections.isEmpty)
                #expect(corrections.allSatisfy { Self.identity($0).tag == key })
                #expect(originals.count == 3)
            }
        }
    }

    @Test func aTopicMessageWithdrawnWhileItsComponentsAreSentSendsNoMoreOfThemAndWithdrawsWhatWent() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                fake.setResponseDelay(.milliseconds(1500))
                let key = try await hub.post(Self.translatedAlert).hex
                try await eventually("the first component reached FCM") { !Self.requests(fake, key).isEmpty }
                let answer = try await hub.request(.delete, "/message/\(key)", as: .admin)
                let answeredAt = Date()
                #expect(answer.status == .ok, "\(answer.text)")
                try await eventually("the withdrawal reached FCM", within: .seconds(30)) {
                    Self.requests(fake, key).contains { $0.data["withdrawn"] == "1" }
                }
                try await eventually("the message is sent", within: .seconds(30)) {
                    try await hub.relayState(ObjectID(hex: key)!) == "sent"
                }
                try await Task.sleep(for: .seconds(1))
                // None went after the answer (the one in flight then had arrived), none after the withdrawal.
                let originals = Self.originals(fake, key)
                #expect(originals.filter { $0.receivedAt > answeredAt }.isEmpty, "\(originals.map(\.data))")
                let withdrawals = Self.requests(fake, key).filter { $0.data["withdrawn"] == "1" }
                let lastOriginal = try #require(originals.map(\.receivedAt).max())
                #expect(withdrawals.allSatisfy { $0.receivedAt >= lastOriginal })
                let stored = try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(try #require(ObjectID(hex: key)))])
                // The components not sent are recorded never to be (all but on a machine too slow to answer in time).
                if originals.count < 3 {
                    #expect(stored?[path: "relay.components.lang-default.state"]?.stringValue == "skipped")
                }
            }
        }
    }

    @Test func aMessageAwaitingApprovalWithdrawnIsNeverSentNorApproved() async throws {
        try await ApprovalTests.with { hub, fake in
            let held = try await ApprovalTests.post(
                hub, ApprovalTests.alert("Wrong school"), as: ApprovalTests.ann,
                expect: .accepted)
            let key = try ApprovalTests.key(held)
            let withdrawn = try await hub.request(.delete, "/message/\(key.hex)?reason=typo", as: ApprovalTests.ann)
            #expect(withdrawn.status == .ok, "\(withdrawn.text)")
            #expect(try withdrawn.json()[path: "relay.state"]?.stringValue == "withdrawn")
            let approve = try await hub.request(
                .post, "/message/\(key.hex)/approve", as: ApprovalTests.bob,
                json: #"{"version": 1}"#)
            #expect(approve.status == .conflict, "\(approve.text)")
            // An ordinary message sent after it reaches FCM; the withdrawn one never does.
            try await ApprovalTests.sendOrdinary(hub, fake, title: "Books")
            #expect(!fake.received.contains { $0.data["msi_key"] == key.hex })
        }
    }
}

import DAO
import FakeFCM
import FCM
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// POST /message's presentation fields (issue "broadcasts"): languages, poster, kind, expiry, non-display messages
/// and samples of a topic's devices, over HTTP against the real hub, database and fake FCM.
@Suite("Broadcast fields of a message", .tags(.faults))
struct BroadcastMessageTests {
    typealias Legacy = Fixtures.Legacy

    /// An Information message to the books subject with `extra` JSON fields.
    static func information(_ extra: String) -> String { RelayOutboxTests.information("Flags", extra: extra) }

    @Test func theNewFieldsAreStoredAsGivenAndShownToEveryone() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            // In 30 days, whole seconds, written with a +01:00 offset.
            let expiryMS = (Int64(Date().timeIntervalSince1970) + 30 * 86_400) * 1000
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(secondsFromGMT: 3600)
            let expiry = formatter.string(from: Date(timeIntervalSince1970: Double(expiryMS) / 1000))
            #expect(expiry.hasSuffix("+01:00"))
            let body = RelayOutboxTests.alert(
                "Closed",
                extra: #"""
                    , "lang": "EN", "translations": {"hi": {"title": "बंद", "desc": "आज बंद"}, "ta": {"title": "மூடல்", "desc": "இன்று", "message": "முழு நாள்"}},
                    "image": "https://school.example/poster.png", "kind": "downtime", "dismissible": false,
                    "expires_at": "\#(expiry)"
                    """#)
            let response = try await hub.request(.post, "/message", as: .communicator, json: body)
            #expect(response.status == .created, "\(response.text)")
            let key = try #require(try response.json()["msi_key"]?.stringValue)
            let stored = try #require(try await hub.database.collection(CollectionName.message).findOne([:]))
            #expect(stored["lang"]?.stringValue == "en")
            #expect(stored["translations"]?.documentValue?.keys == ["hi", "ta"])  // in the order given
            #expect(stored[path: "translations.hi.desc"]?.stringValue == "आज बंद")
            #expect(stored[path: "translations.hi.message"]?.stringValue == "")
            #expect(stored["kind"]?.stringValue == "downtime" && stored["dismissible"]?.boolValue == false)
            #expect(stored["banner"]?.boolValue == true)
            #expect(stored["expires_at"]?.int64Value == expiryMS)
            // The relay sends nothing after it, and catch-up leaves it out after it.
            #expect(stored[path: "relay.expires_at"]?.int64Value == expiryMS)
            // Anyone sees the presentation, never the relay's detail.
            let shown = try await hub.request(.get, "/message/\(key)").json()
            #expect(shown["image"]?.stringValue == "https://school.example/poster.png")
            #expect(shown[path: "translations.ta.title"]?.stringValue == "மூடல்")
            #expect(shown["banner"] == nil)
        }
    }

    @Test func aMessageWithoutTheNewFieldsIsStoredAsBefore() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            try await hub.request(.post, "/message", as: .communicator, json: RelayOutboxTests.alert("Plain"))
            let stored = try #require(try await hub.database.collection(CollectionName.message).findOne([:]))
            for field in [
                "lang", "translations", "image", "kind", "dismissible", "expires_at", "display", "sample",
                "cohort", "banner", "data",
            ] {
                #expect(stored[field] == nil, "\(field)")
            }
        }
    }

    @Test func badPresentationFieldsAreRefusedWithTheirCodeAndStoreNothing() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let tomorrow = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
            let cases: [(String, String, String)] = [
                (
                    "http poster", RelayOutboxTests.alert("x", extra: #", "image": "http://school.example/p.png""#),
                    "invalid_image"
                ),
                (
                    "long poster",
                    RelayOutboxTests.alert(
                        "x", extra: #", "image": "https://s.example/\#(String(repeating: "p", count: 1_010))""#),
                    "invalid_image"
                ),
                ("poster not a string", RelayOutboxTests.alert("x", extra: #", "image": 7"#), "invalid_image"),
                (
                    "region as key",
                    RelayOutboxTests.alert("x", extra: #", "translations": {"hi-IN": {"title": "t", "desc": "d"}}"#),
                    "invalid_translations"
                ),
                (
                    "dollar key",
                    RelayOutboxTests.alert("x", extra: #", "translations": {"$hi": {"title": "t", "desc": "d"}}"#),
                    "invalid_body"
                ),
                (
                    "the own language",
                    RelayOutboxTests.alert("x", extra: #", "translations": {"en": {"title": "t", "desc": "d"}}"#),
                    "invalid_translations"
                ),
                (
                    "an Alert's translation without desc",
                    RelayOutboxTests.alert("x", extra: #", "translations": {"hi": {"title": "t"}}"#),
                    "invalid_translations"
                ),
                (
                    "a translation without title", Self.information(#", "translations": {"hi": {"message": "m"}}"#),
                    "invalid_translations"
                ),
                (
                    "unknown text field", Self.information(#", "translations": {"hi": {"title": "t", "body": "b"}}"#),
                    "invalid_translations"
                ),
                ("bad lang", RelayOutboxTests.alert("x", extra: #", "lang": "english""#), "invalid_translations"),
                ("bad kind", RelayOutboxTests.alert("x", extra: #", "kind": "Down Time""#), "invalid_kind"),
                (
                    "dismissible not a bool", RelayOutboxTests.alert("x", extra: #", "dismissible": "no""#),
                    "invalid_kind"
                ),
                ("expiry past", RelayOutboxTests.alert("x", extra: #", "expires_at": 1000"#), "invalid_expiry"),
                (
                    "expiry not a time", RelayOutboxTests.alert("x", extra: #", "expires_at": "tomorrow""#),
                    "invalid_expiry"
                ),
                (
                    "expiry before send_at",
                    RelayOutboxTests.alert(
                        "x", extra: #", "send_at": \#(tomorrow), "expires_at": \#(tomorrow - 3_600_000)"#),
                    "invalid_expiry"
                ),
                ("non-display without data", Self.information(#", "display": false"#), "invalid_display"),
                (
                    "non-display with a poster",
                    Self.information(#", "display": false, "data": {"f": "1"}, "image": "https://s.example/p.png""#),
                    "invalid_display"
                ),
                ("display not a bool", Self.information(#", "display": 0"#), "invalid_display"),
                ("sample of 1", Self.information(#", "sample": 1"#), "invalid_sample"),
                ("sample of 0", Self.information(#", "sample": 0"#), "invalid_sample"),
                ("cohort without sample", Self.information(#", "cohort": "a""#), "invalid_sample"),
                ("bad cohort", Self.information(#", "sample": 0.5, "cohort": "a b""#), "invalid_sample"),
                ("reserved data key", Self.information(#", "data": {"lang": "x"}"#), "invalid_data"),
            ]
            for (name, body, code) in cases {
                let response = try await hub.request(.post, "/message", as: .communicator, json: body)
                #expect(response.status == .unprocessableContent, "\(name)")
                #expect(response.errorCode == code, "\(name): \(response.text)")
            }
            #expect(try await hub.database.collection(CollectionName.message).countDocuments([:]) == 0)
        }
    }

    @Test func aSampleGoesToAStableShareOfTheTopicsRegisteredDevicesByToken() async throws {
        try await FakeFCM.with { fake in
            let topic = RelayOutboxTests.booksTopic
            // 1,000 registered devices that want the topic, one of them in Hindi; 20 unregistered ones that are never
            // picked.
            let phones =
                [FanOutTests.Phone("token-hindi", person: nil)]
                + (1..<1_000).map { FanOutTests.Phone(String(format: "token-%04d", $0), person: nil) }
            let gone = (0..<20).map { FanOutTests.Phone("gone-\($0)", person: nil) }
            try await HubHarness.with(
                seed: { database in
                    try await HubHarness.legacy(database)
                    try await FanOutTests.seed(phones + gone, in: database)
                    try await database.collection(CollectionName.devices).updateOne(
                        ["registration": "token-hindi"], ["$set": ["locale": "hi-IN"]])
                    try await database.collection(CollectionName.devices).updateMany(
                        ["registration": ["$regex": "^gone-"]], ["$set": ["state": "unregistered"]])
                    let subscriptions = (phones + gone).map { phone -> BSONDocument in
                        [
                            "_id": .objectID(ObjectID()), "device": .objectID(phone.id),
                            "registration": .string(phone.token),
                            "platform": "android", "topic": .string(topic), "want": true, "applied": true,
                            "pending": false,
                            "due_at": 0, "attempts": 0, "updated_at": 0,
                        ]
                    }
                    for start in stride(from: 0, to: subscriptions.count, by: 500) {
                        try await database.collection(CollectionName.subscriptions)
                            .insertMany(Array(subscriptions[start..<min(start + 500, subscriptions.count)]))
                    }
                }, relay: try RelayOutboxTests.relay(to: fake)
            ) { hub in
                func send(cohort: String) async throws -> (key: ObjectID, tokens: Set<String>) {
                    let before = fake.received.count
                    let key = try await hub.post(
                        Self.information(
                            #", "display": false, "data": {"new_timetable": "on"}, "sample": 0.1, "cohort": "\#(cohort)", "translations": null"#
                        ))
                    let message = try await MessageDAO(database: hub.database).get(msiKey: key)
                    try await FanOutTests.waitUntilSent(message, in: hub.database)
                    let sends = fake.received.dropFirst(before)
                    #expect(sends.allSatisfy { $0.message["topic"] == nil && $0.message["notification"] == nil })
                    #expect(sends.allSatisfy { $0.data["audience"] == "cohort" && $0.data["topic_key"] == topic })
                    #expect(sends.allSatisfy { $0.data["display"] == "false" && $0.data["new_timetable"] == "on" })
                    return (key, Set(sends.compactMap { $0.message["token"] as? String }))
                }
                // Exactly the registered devices whose place in the cohort falls in its first tenth (about 100: how
                // many depends on the devices' random ids, so the set is computed, not a range guessed).
                func picked(by cohort: String) -> Set<String> {
                    Set(phones.filter { Broadcast.position(of: $0.id, in: cohort) < 0.1 }.map(\.token))
                }
                let first = try await send(cohort: "timetable-beta")
                #expect(first.tokens == picked(by: "timetable-beta"), "\(first.tokens.count) devices")
                #expect(!first.tokens.isEmpty && first.tokens.allSatisfy { !$0.hasPrefix("gone-") })
                // The deliveries show who was in it.
                let report = try await hub.request(.get, "/message/\(first.key.hex)/deliveries", as: .communicator)
                    .json()
                #expect(report[path: "counts.sent"]?.int64Value == Int64(first.tokens.count))
                // The same name picks the same devices; another name others.
                let again = try await send(cohort: "timetable-beta")
                #expect(again.tokens == first.tokens)
                let other = try await send(cohort: "quiz-beta")
                #expect(other.tokens == picked(by: "quiz-beta") && other.tokens != first.tokens)
                // Nobody but its sender and admins sees a sample in history, nor catches up with it.
                let public_ = try await hub.request(.get, "/message?topic_key=\(topic)").json()
                #expect(public_["messages"]?.arrayValue?.isEmpty == true)
                #expect(try await hub.request(.get, "/message/\(first.key.hex)").status == .notFound)
            }
        }
    }

    @Test func eachRegisteredPhoneGetsATranslatedAlertOnceInItsLanguageInOneRequestPerLanguagePlusOne() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let forced = DeviceTests.forced
                // Registered phones in four languages and one without a locale; an app that subscribed itself.
                let phones: [(token: String, locale: String?)] = [
                    ("phone-en", "en"), ("phone-hi", "hi-IN"), ("phone-ta", "ta"), ("phone-fr", "fr"),
                    ("phone-none", nil),
                ]
                for (token, locale) in phones {
                    #expect(try await hub.register(token, locale: locale).status == .created)
                }
                fake.forceSubscribe("app-self", to: forced)
                for (token, locale) in phones {
                    let language = locale.flatMap(LanguageTopic.topic(forLocale:))
                    try await eventually("\(token) at FCM") {
                        fake.subscriptions(of: token).contains(forced)
                            && fake.languageTopics(of: token) == Set([language].compactMap { $0 })
                    }
                }
                let tokens = phones.map(\.token) + ["app-self"]
                /// Posts an Alert with `translations` and returns, per token, the notification titles it received,
                /// and the number of FCM requests the message took.
                func send(_ translations: [(String, String)]) async throws -> (
                    titles: [String: [String]], requests: Int
                ) {
                    let before = fake.received.count
                    let fields = translations.map { #""\#($0.0)": {"title": "\#($0.1)", "desc": "d-\#($0.0)"}"# }
                    let key = try await hub.post(
                        RelayOutboxTests.alert(
                            "Closed", extra: #", "translations": {\#(fields.joined(separator: ", "))}"#))
                    try await eventually("the message is sent") { try await hub.relayState(key) == "sent" }
                    var titles: [String: [String]] = [:]
                    for token in tokens {
                        titles[token] = fake.drainInbox(token).compactMap { $0.notification?.title }
                    }
                    return (titles, fake.received.count - before)
                }
                let two = try await send([("hi", "बंद"), ("ta", "மூடல்")])
                #expect(two.requests == 3)
                #expect(
                    two.titles == [
                        "phone-en": ["Closed"], "phone-hi": ["बंद"], "phone-ta": ["மூடல்"],
                        "phone-fr": ["Closed"], "phone-none": ["Closed"], "app-self": ["Closed"],
                    ])
                // Six translations: the first four go separately (a condition names five topics at most), the
                // devices of the others get the default text; each phone still gets the message once.
                let six = try await send([
                    ("hi", "hi"), ("de", "de"), ("fr", "fr"), ("ja", "ja"), ("ta", "ta"), ("es", "es"),
                ])
                #expect(six.requests == 5)
                #expect(
                    six.titles == [
                        "phone-en": ["Closed"], "phone-hi": ["hi"], "phone-ta": ["Closed"],
                        "phone-fr": ["fr"], "phone-none": ["Closed"], "app-self": ["Closed"],
                    ])
            }
        }
    }

    @Test func theCohortPickIsUniformAndIndependentOfTheName() {
        let devices = (0..<20_000).map { _ in ObjectID() }
        let picked = devices.filter { Broadcast.position(of: $0, in: "a") < 0.1 }
        #expect((1_800...2_200).contains(picked.count))
        let both = picked.filter { Broadcast.position(of: $0, in: "b") < 0.1 }
        #expect((100...300).contains(both.count))  // about 10 % of 10 %: independent names
    }
}

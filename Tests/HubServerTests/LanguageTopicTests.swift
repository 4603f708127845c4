import DAO
import FakeFCM
import FCM
import HTTPTypes
import HubCore
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Relay
import Testing

/// Language topics: the hub subscribes every registered device with a locale to `lang-<code>` through its
/// reconciler, moves it when the locale changes, gives the devices registered before theirs once, and never shows
/// the topic among the device's subjects; checked at the fake FCM, whose conditions see the topics.
@Suite("Device language topics", .tags(.faults))
struct LanguageTopicTests {
    static let forced = DeviceTests.forced
    static let recommended = DeviceTests.recommended

    @Test func aLocaleNamesItsPrimaryLanguageOrNone() {
        let cases: [(String?, String?)] = [
            ("en", "en"), ("hi-IN", "hi"), ("zh-Hant-TW", "zh"), ("pt_BR", "pt"), ("EN-gb", "en"), ("fil-PH", "fil"),
            ("de_DE.UTF-8", "de"), (nil, nil), ("", nil), ("C", nil), ("english", nil), ("und", nil),
            ("x-klingon", nil),
            ("-IN", nil), ("é", nil), ("12", nil),
        ]
        for (locale, language) in cases {
            #expect(LanguageTopic.language(ofLocale: locale) == language, "\(locale ?? "nil")")
            #expect(LanguageTopic.topic(forLocale: locale) == language.map { "lang-" + $0 }, "\(locale ?? "nil")")
        }
        #expect(
            LanguageTopic.isTopic("lang-hi") && !LanguageTopic.isTopic("lang-") && !LanguageTopic.isTopic("lang-HI"))
        #expect(!LanguageTopic.isTopic(Self.forced) && !ServerOwnedTopic.contains(Self.forced))
        #expect(ServerOwnedTopic.contains("lang-ta") && ServerOwnedTopic.contains("quiet-0123456789ab"))
    }

    @Test func registeredDevicesAreOnTheirLanguageTopicAndConditionsReachEachLanguage() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let locales: [(token: String, locale: String?, topic: String?)] = [
                    ("phone-en", "en", "lang-en"), ("phone-hi", "hi-IN", "lang-hi"), ("phone-ta", "ta", "lang-ta"),
                    ("phone-fr", "fr", "lang-fr"), ("phone-none", nil, nil),
                ]
                var phones: [String: Phone] = [:]
                for (token, locale, _) in locales {
                    let phone = try await hub.register(token, locale: locale)
                    #expect(phone.status == .created)
                    // The answer lists the subjects, never the language topic.
                    #expect(Set(phone.topics) == [Self.forced, Self.recommended])
                    phones[token] = phone
                }
                for (token, _, topic) in locales {
                    let expected = Set([Self.forced, Self.recommended] + [topic].compactMap { $0 })
                    try await eventually("\(token) at FCM") { fake.subscriptions(of: token) == expected }
                }
                // What a message with hi and ta translations sends to: each device reached by exactly one request.
                let forced = "'\(Self.forced)' in topics"
                #expect(fake.registrations(reachedBy: "\(forced) && 'lang-hi' in topics") == ["phone-hi"])
                #expect(fake.registrations(reachedBy: "\(forced) && 'lang-ta' in topics") == ["phone-ta"])
                #expect(
                    fake.registrations(reachedBy: "\(forced) && !('lang-hi' in topics) && !('lang-ta' in topics)")
                        == ["phone-en", "phone-fr", "phone-none"])

                // The device's subjects, its catch-up topics and the audiences leave the language topic out.
                for (token, _, _) in locales {
                    let phone = try #require(phones[token])
                    try await eventually {
                        try await hub.subscriptions(phone).allSatisfy { $0["applied"]?.boolValue == true }
                    }
                    let listed = try await hub.subscriptions(phone).compactMap { $0["topic_key"]?.stringValue }
                    #expect(Set(listed) == [Self.forced, Self.recommended], "\(token)")
                }
                let services = HubServices(pool: try TestDatabase.sharedPool(), database: hub.database)
                try await services.cube.cache.refresh()
                let hiID = try #require(phones["phone-hi"]).deviceID
                let hi = try await DeviceDAO(database: hub.database).get(try #require(ObjectID(hex: hiID)))
                #expect(try await services.devices.topicKeys(of: hi) == [Self.forced, Self.recommended].sorted())
                let sizes = try await services.devices.audienceSizes()
                #expect(!sizes.keys.contains { $0.hasPrefix("lang-") })
                #expect(sizes[Self.forced] == 5)

                // A new locale moves the device from lang-hi to lang-ta; its subjects stay.
                let hiPhone = try #require(phones["phone-hi"])
                let moved = try await hub.request(
                    .put, "/device/\(hiPhone.deviceID)", as: .token(hiPhone.secret),
                    json: #"{"locale": "ta-IN"}"#)
                #expect(moved.status == .ok)
                try await eventually("phone-hi moved to lang-ta") {
                    fake.subscriptions(of: "phone-hi") == [Self.forced, Self.recommended, "lang-ta"]
                }
                #expect(fake.subscribers(of: "lang-hi").isEmpty)
                #expect(fake.registrations(reachedBy: "\(forced) && 'lang-ta' in topics") == ["phone-ta", "phone-hi"])
                // Registering again with the same locale, with the device's secret, changes nothing at FCM.
                let calls = fake.subscriptionCallCount
                let again = try await hub.register("phone-hi", locale: "ta", secret: hiPhone.secret)
                #expect(again.status == .ok)
                try await eventually {
                    try await SubscriptionDAO(database: hub.database).backlog().count == 0
                }
                #expect(fake.subscriptionCallCount == calls)
                // Re-registering under another locale moves it back.
                _ = try await hub.register("phone-hi", locale: "hi-IN", secret: again.secret)
                try await eventually("phone-hi back on lang-hi") { fake.languageTopics(of: "phone-hi") == ["lang-hi"] }

                // A deleted device leaves its language topic like every other.
                let fr = try #require(phones["phone-fr"])
                #expect(
                    try await hub.request(.delete, "/device/\(fr.deviceID)", as: .token(fr.secret)).status == .noContent
                )
                try await eventually("phone-fr left FCM") { fake.subscriptions(of: "phone-fr").isEmpty }
                #expect(fake.subscribers(of: "lang-fr").isEmpty)
            }
        }
    }

    @Test func devicesRegisteredBeforeLanguageTopicsGetThemOnceFromTheRollout() async throws {
        let old: [(token: String, locale: String?, topic: String?)] = [
            ("old-hi", "hi-IN", "lang-hi"), ("old-pt", "pt_BR", "lang-pt"), ("old-zh", "zh-Hant-TW", "lang-zh"),
            ("old-none", nil, nil), ("old-garbage", "C", nil),
        ]
        try await FakeFCM.with { fake in
            try await HubHarness.with(
                seed: { database in
                    try await HubHarness.legacy(database)
                    // Registered, and subscribed to their subjects, before the hub owned language topics.
                    let devices = DeviceDAO(database: database), wishes = SubscriptionDAO(database: database)
                    for (token, locale, _) in old {
                        let device = try await devices.register(
                            registration: token, platform: .android, locale: locale,
                            appVersion: nil, secretHash: "x"
                        ).device
                        try await wishes.wantNew([Self.forced], for: device)
                    }
                }, relay: try RelayOutboxTests.relay(to: fake)
            ) { hub in
                for (token, _, topic) in old {
                    let expected = Set([Self.forced] + [topic].compactMap { $0 })
                    try await eventually("\(token) at FCM") { fake.subscriptions(of: token) == expected }
                }
                let progress = hub.database.collection(CollectionName.languageRollout)
                try await eventually("the rollout finished") {
                    try await progress.countDocuments(["finished_at": ["$exists": true]]) == 1
                }
                // Through the reconciler's records, like every subscription: recorded applied once FCM answered (the
                // records are written after the calls, so FCM may hold them a moment before).
                let records = hub.database.collection(CollectionName.subscriptions)
                try await eventually("the language records applied") {
                    try await records.countDocuments(["topic": ["$regex": "^lang-"], "want": true, "applied": true])
                        == 3
                }
                #expect(try await records.countDocuments(["topic": ["$regex": "^lang-"]]) == 3)
                // Finished means finished, for every replica: another reconciler does not walk again.
                let calls = fake.subscriptionCallCount
                try await DeviceTests.withFCM(fake) { fcm in
                    let other = DeviceTests.reconciler(
                        hub.database, fcm: fcm, configuration: .init(repairInterval: nil))
                    let walked = try await other.rollOutLanguagesOnce()
                    #expect(!walked)
                }
                #expect(fake.subscriptionCallCount == calls)
                #expect(try await progress.countDocuments([:]) == 1)
            }
        }
    }

    @Test func theRolloutWalksPagesAndARecordedWishDecides() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                let devices = DeviceDAO(database: database), wishes = SubscriptionDAO(database: database)
                var registered: [Device] = []
                for index in 0..<7 {
                    registered.append(
                        try await devices.register(
                            registration: "walk-\(index)", platform: .ios,
                            locale: index % 2 == 0 ? "hi-IN" : "ta",
                            appVersion: nil, secretHash: "x"
                        ).device)
                }
                try await DeviceTests.withFCM(fake) { fcm in
                    let reconciler = DeviceTests.reconciler(
                        database, fcm: fcm,
                        configuration: .init(rolloutPage: 3, repairInterval: nil))
                    // Device 0 has its wish already (it registered again meanwhile): the walk leaves it as it is.
                    try await wishes.setLanguage("lang-hi", for: registered[0])
                    try await reconciler.applyOnce()
                    #expect(fake.subscriptionCallCount == 1)
                    // Pages of 3, 3, 1: the last one, shorter than a page, ends the walk.
                    #expect(try await reconciler.rollOutLanguagesOnce())
                    #expect(try await reconciler.rollOutLanguagesOnce())
                    #expect(try await reconciler.rollOutLanguagesOnce())
                    let walkedAgain = try await reconciler.rollOutLanguagesOnce()
                    #expect(!walkedAgain)
                    try await eventually {
                        try await reconciler.applyOnce()
                        return try await wishes.backlog().count == 0
                    }
                }
                for index in 0..<7 {
                    #expect(fake.languageTopics(of: "walk-\(index)") == [index % 2 == 0 ? "lang-hi" : "lang-ta"])
                }
                #expect(fake.subscriptionCallCount == 7)
            }
        }
    }

    @Test func theRepairPassRestoresALostLanguageTopicAndRemovesAStrayOne() async throws {
        try await FakeFCM.with { fake in
            try await TestDatabase.with { database in
                try await DatabaseIndexes.ensure(in: database)
                _ = try await DeviceDAO(database: database).register(
                    registration: "drifting", platform: .android, locale: "hi-IN", appVersion: nil, secretHash: "x"
                ).device
                try await DeviceTests.withFCM(fake) { fcm in
                    let reconciler = DeviceTests.reconciler(
                        database, fcm: fcm, configuration: .init(repairInterval: nil))
                    // No wish recorded yet (an old device): the repair pass records it.
                    try await reconciler.repairAll()
                    try await eventually {
                        try await reconciler.applyOnce()
                        return fake.languageTopics(of: "drifting") == ["lang-hi"]
                    }
                    // ... and its record is written (the reconciler writes records in batches, after the calls).
                    try await eventually("the record of lang-hi is written") {
                        try await database.collection(CollectionName.subscriptions)
                            .findOne(["registration": "drifting", "topic": "lang-hi"])?["pending"]?.boolValue == false
                    }
                    // Later, FCM lost it, and someone subscribed the token to another language: both are put right.
                    fake.forceUnsubscribe("drifting", from: "lang-hi")
                    fake.forceSubscribe("drifting", to: "lang-de")
                    fake.forceSubscribe("drifting", to: "news")
                    try await reconciler.repairAll()
                    try await eventually {
                        try await reconciler.applyOnce()
                        return fake.subscriptions(of: "drifting") == ["lang-hi", "news"]
                    }
                }
            }
        }
    }
}

extension HubHarness {
    /// Registers `registration` as an Android phone with `locale`, proving with `secret` that it is its device.
    func register(_ registration: String, locale: String?, secret: String? = nil) async throws -> Phone {
        let localeField = locale.map { #", "locale": "\#($0)""# } ?? ""
        let response = try await request(
            .post, "/device", as: secret.map(Caller.token) ?? .anonymous,
            json: #"{"registration": "\#(registration)", "platform": "android"\#(localeField)}"#)
        let body = try response.json()
        return Phone(
            status: response.status, deviceID: body["device_id"]?.stringValue ?? "",
            secret: body["device_secret"]?.stringValue ?? "",
            topics: body["subscriptions"]?.arrayValue?.compactMap { $0.documentValue?["topic_key"]?.stringValue } ?? [],
            text: response.text)
    }
}

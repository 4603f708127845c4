import Foundation
import Testing

@testable import FCM
import HubModel

/// Issue 31: a message in several languages, posters, kinds, expiry and messages not shown.
@Suite("FCM mapping of translations, posters and messages not shown")
struct TranslationMappingTests {
    static let topic = "65f1c0ffee000000000000aa-65f1c0ffee000000000000bb-65f1c0ffee000000000000cc"

    /// The `message` object of a request.
    static func message(_ request: FCMRequest) throws -> [String: Any] {
        try #require(JSON.object(request.body)["message"] as? [String: Any])
    }

    /// The `data` of a request.
    static func data(_ request: FCMRequest) throws -> [String: String] {
        try #require(try message(request)["data"] as? [String: String])
    }

    /// The `translations` of a request's data, parsed as the app parses it, keys in the order written.
    static func translations(_ request: FCMRequest) throws -> [String] {
        let text = try #require(try data(request)["translations"])
        let parsed = try #require(
            try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: [String: String]])
        // JSONSerialization forgets the order: read it from the text.
        let position = { (key: String) in text.range(of: "\"\(key)\":{")?.lowerBound ?? text.endIndex }
        return parsed.keys.sorted { position($0) < position($1) }
    }

    static func condition(_ request: FCMRequest) throws -> String? {
        try message(request)["condition"] as? String
    }

    // MARK: Languages

    @Test func twoTranslationsAreThreeRequestsEachWithItsNotificationAndData() throws {
        let requests = FCMMapping.requests(for: Translations.message(.alert, Translations.two))
        #expect(requests.map(\.component.rawValue) == ["lang-hi", "lang-ta", "lang-default"])
        #expect(
            try requests.map(Self.condition) == [
                "'\(Self.topic)' in topics && 'lang-hi' in topics",
                "'\(Self.topic)' in topics && 'lang-ta' in topics",
                "'\(Self.topic)' in topics && !('lang-hi' in topics) && !('lang-ta' in topics)",
            ])
        let hindi = try Self.message(requests[0])
        #expect(hindi["topic"] == nil)
        #expect(hindi["notification"] as? [String: String] == ["title": "हिम दिवस", "body": "आज स्कूल बंद है"])
        let hindiData = try Self.data(requests[0])
        #expect(hindiData["title"] == "हिम दिवस" && hindiData["lang"] == "hi" && hindiData["topic_key"] == Self.topic)
        #expect(hindiData["message"] == Translations.hi.message && hindiData["dist"] == "Alert")
        // The other languages, the main one first, for the app to switch to.
        #expect(try Self.translations(requests[0]) == ["en", "ta"])
        let main = try Self.message(requests[2])
        #expect(main["notification"] as? [String: String] == ["title": "Snow day", "body": "School is closed today"])
        #expect(try Self.data(requests[2])["lang"] == "en")
        #expect(try Self.translations(requests[2]) == ["hi", "ta"])
        // Each request is a pop-up with the urgency's channel and level, as an Alert's notification component.
        for request in requests {
            let message = try Self.message(request)
            let android = try #require(message["android"] as? [String: Any])
            #expect((android["notification"] as? [String: String])?["channel_id"] == "msi_active")
            let headers = (message["apns"] as? [String: Any])?["headers"] as? [String: String]
            #expect(headers == ["apns-priority": "10", "apns-collapse-id": "65f1c0ffee00000000000001"])
            #expect(!request.isTruncated && request.payloadSize <= FCMMappingOptions.defaultPayloadLimit)
        }
    }

    @Test func theTranslationsJSONIsCompactAndInTheOrderGiven() throws {
        let message = Translations.message(.information, [Translations.ta, Translations.fr])
        let request = try #require(FCMMapping.requests(for: message).first)
        let text = try #require(try Self.data(request)["translations"])
        #expect(
            text
                == #"{"ta":{"title":"பனி நாள்","desc":"இன்று பள்ளி மூடப்பட்டுள்ளது","message":"பனி காரணமாக திங்கள்கிழமை மாவட்டத்தின் அனைத்து பள்ளிகளும் மூடப்பட்டுள்ளன."},"fr":{"title":"Jour de neige","desc":"L'école est fermée aujourd'hui","message":"Toutes les écoles du district sont fermées lundi à cause de la neige."}}"#
        )
    }

    @Test func sixTranslationsSendFourSeparatelyAndTheOtherTwoWithTheMainText() throws {
        let requests = FCMMapping.requests(for: Translations.message(.alert, Translations.six))
        #expect(requests.map(\.component.rawValue) == ["lang-hi", "lang-ta", "lang-fr", "lang-de", "lang-default"])
        #expect(try Self.condition(requests[3]) == "'\(Self.topic)' in topics && 'lang-de' in topics")
        #expect(
            try Self.condition(requests[4]) == "'\(Self.topic)' in topics && !('lang-hi' in topics) && "
                + "!('lang-ta' in topics) && !('lang-fr' in topics) && !('lang-de' in topics)")
        // Spanish and Marathi phones get the English pop-up, and their texts in the data.
        #expect(try Self.translations(requests[4]) == ["hi", "ta", "fr", "de", "es", "mr"])
        for request in requests {
            let topics = try #require(try Self.condition(request)).components(separatedBy: " in topics").count - 1
            #expect(topics <= 5)
        }
    }

    @Test func quietExclusionsComeFirstInTheConditionsBudget() throws {
        let message = Translations.message(.alert, Translations.six)
        let two = FCMMapping.requests(for: message, excluding: ["q1", "q2"])
        #expect(two.map(\.component.rawValue) == ["lang-hi", "lang-ta", "lang-default"])
        #expect(
            try two.map(Self.condition) == [
                "'\(Self.topic)' in topics && 'lang-hi' in topics && !('q1' in topics) && !('q2' in topics)",
                "'\(Self.topic)' in topics && 'lang-ta' in topics && !('q1' in topics) && !('q2' in topics)",
                "'\(Self.topic)' in topics && !('q1' in topics) && !('q2' in topics) && !('lang-hi' in topics) "
                    + "&& !('lang-ta' in topics)",
            ])
        let three = FCMMapping.requests(for: message, excluding: ["q1", "q2", "q3"])
        #expect(three.map(\.component.rawValue) == ["lang-hi", "lang-default"])
        // Four quiet windows take the whole budget: one request in the main language, the translations in its data.
        let four = FCMMapping.requests(for: message, excluding: ["q1", "q2", "q3", "q4", "q5"])
        #expect(four.map(\.component.rawValue) == ["lang-default"])
        #expect(
            try Self.condition(four[0])
                == FCMMapping.condition(topic: Self.topic, excluding: ["q1", "q2", "q3", "q4"]))
        #expect(try Self.translations(four[0]).count == 6)
    }

    @Test func aRetryKeepsTheLanguagesAlreadySentSeparatelyBeforeTheQuietExclusions() throws {
        let message = Translations.message(.alert, Translations.two)
        let requests = FCMMapping.requests(for: message, excluding: ["q1", "q2", "q3", "q4"], sentSeparately: ["hi"])
        #expect(requests.map(\.component.rawValue) == ["lang-hi", "lang-default"])
        #expect(
            try Self.condition(requests[1]) == "'\(Self.topic)' in topics && !('q1' in topics) "
                + "&& !('q2' in topics) && !('q3' in topics) && !('lang-hi' in topics)")
        let split = FCMMapping.languageSplit(for: message, excluding: ["q1", "q2"], sentSeparately: ["ta"])
        #expect(split == .init(quiet: ["q1", "q2"], languages: ["hi", "ta"]))
    }

    @Test func anInformationWithTranslationsStaysOneDataRequest() throws {
        let requests = FCMMapping.requests(for: Translations.message(.information, Translations.six))
        let only = try #require(requests.first)
        #expect(requests.count == 1 && only.component == .data)
        let message = try Self.message(only)
        #expect(message["topic"] as? String == Self.topic && message["notification"] == nil)
        #expect(try Self.data(only)["lang"] == "en" && Self.data(only)["title"] == "Snow day")
        #expect(try Self.translations(only) == ["hi", "ta", "fr", "de", "es", "mr"])
    }

    @Test func translationsPastThePayloadLimitAreLeftOutInOrderAndTheMessageMarkedTruncated() throws {
        let long = (1...8).map { index in
            RelayMessage.Translation(
                language: ["hi", "ta", "fr", "de", "es", "mr", "bn", "te"][index - 1],
                title: "T\(index)", desc: "", message: String(repeating: "ब", count: 100 + index))
        }
        let request = try #require(FCMMapping.requests(for: Translations.message(.information, long)).first)
        let data = try Self.data(request)
        #expect(request.isTruncated && data["truncated"] == "true")
        #expect(request.payloadSize <= FCMMappingOptions.defaultPayloadLimit)
        #expect(request.payloadSize == FCMMapping.payloadSize(data: data, notification: nil))
        let kept = try Self.translations(request)
        #expect(!kept.isEmpty && kept.count < long.count)
        #expect(kept == Array(long.map(\.language).prefix(kept.count)))
        // The message's own texts are whole: only translations were left out.
        #expect(data["message"] == RelayMessage.sample(.information).message)
    }

    // MARK: A device's language

    @Test func aDeviceGetsItsLanguageFromItsLocaleOrTheMainText() throws {
        var message = Translations.message(.alert, Translations.two)
        message.topicKey = ""
        let hindi = FCMMapping.deviceRequest(for: message, token: "t1", audience: .person, language: "hi-IN")
        #expect(
            try Self.message(hindi)["notification"] as? [String: String]
                == ["title": "हिम दिवस", "body": "आज स्कूल बंद है"])
        let hindiData = try Self.data(hindi)
        #expect(hindiData["title"] == "हिम दिवस" && hindiData["lang"] == "hi" && hindiData["audience"] == "person")
        #expect(hindiData["topic_key"] == nil)
        #expect(try Self.translations(hindi) == ["en", "ta"])
        #expect(hindi.component == .device)
        for locale in ["fr-FR", "en_GB", nil] as [String?] {
            let other = FCMMapping.deviceRequest(for: message, token: "t1", audience: .person, language: locale)
            #expect(try Self.data(other)["title"] == "Snow day" && Self.data(other)["lang"] == "en")
        }
        #expect(FCMMapping.primaryLanguage(of: "zh-Hant-TW") == "zh" && FCMMapping.primaryLanguage(of: "TA") == "ta")
    }

    @Test func aDeviceOfAPOSIXLocaleGetsTheLanguageItsLanguageTopicNames() throws {
        var message = Translations.message(.alert, Translations.two)
        message.topicKey = ""
        // A device of locale "hi.UTF-8" is subscribed to lang-hi: its own sends are in Hindi too (they looked for a
        // "hi.utf" translation and sent the main text).
        for locale in ["hi.UTF-8", "hi_IN.UTF-8", "hi@latin", "HI"] {
            let request = FCMMapping.deviceRequest(for: message, token: "t1", audience: .person, language: locale)
            #expect(try Self.data(request)["lang"] == "hi", "\(locale)")
            #expect(FCMMapping.primaryLanguage(of: locale) == LocaleLanguage.language(ofLocale: locale))
        }
        // What names no language is none: the main text.
        for locale in ["und", "1a", "", "toolong-XX"] {
            #expect(FCMMapping.primaryLanguage(of: locale) == nil, "\(locale)")
        }
    }

    @Test func aHeldBackTopicSendIsTheDevicesLanguageRequestByToken() throws {
        let message = Translations.message(.alert, Translations.two)
        let tamil = FCMMapping.requests(for: message, token: "t1", language: "ta-IN")
        #expect(tamil.map(\.component.rawValue) == ["lang-ta"])
        let sent = try Self.message(tamil[0])
        #expect(sent["token"] as? String == "t1" && sent["condition"] == nil)
        #expect((sent["notification"] as? [String: String])?["title"] == "பனி நாள்")
        #expect(try Self.data(tamil[0])["topic_key"] == Self.topic)
        #expect(FCMMapping.requests(for: message, token: "t1").map(\.component.rawValue) == ["lang-default"])
        // Without translations, a token send keeps today's two components whatever the device's language.
        #expect(
            FCMMapping.requests(for: .sample(.alert), token: "t1", language: "hi").map(\.component)
                == [.notification, .data])
    }

    // MARK: Posters, kinds, expiry

    @Test func aPosterIsInBothPlatformBlocksOfEveryRequestWithANotification() throws {
        let url = "https://school.example/posters/diwali.png"
        var plain = RelayMessage.sample(.alert)
        plain.image = url
        var translated = Translations.message(.alert, Translations.two)
        translated.image = url
        for request in FCMMapping.requests(for: plain) + FCMMapping.requests(for: translated) {
            let message = try Self.message(request)
            let apns = try #require(message["apns"] as? [String: Any])
            let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
            if request.component == .data {
                #expect(message["notification"] == nil && apns["fcm_options"] == nil)
                #expect(try Self.data(request)["image"] == url)
                continue
            }
            #expect((message["notification"] as? [String: String])?["image"] == url)
            let android = (message["android"] as? [String: Any])?["notification"] as? [String: String]
            #expect(android?["image"] == url)
            #expect(apns["fcm_options"] as? [String: String] == ["image": url])
            #expect((aps?["mutable-content"] as? NSNumber)?.intValue == 1)
        }
        // Without a poster, no request has those fields (today's requests).
        for request in FCMMapping.requests(for: .sample(.alert)) {
            let message = try Self.message(request)
            #expect((message["apns"] as? [String: Any])?["fcm_options"] == nil)
            #expect(!String(decoding: request.body, as: UTF8.self).contains("mutable-content"))
        }
    }

    @Test func kindDismissibleAndExpiryTravelInTheDataAndTheTTLIsWhatIsLeft() throws {
        var message = RelayMessage.sample(.information)
        message.kind = "downtime"
        message.dismissible = false
        message.senderExpiresAt = message.timestamp + 3_600_000
        message.sendingAt = message.timestamp + 600_000
        let request = try #require(FCMMapping.requests(for: message).first)
        let data = try Self.data(request)
        #expect(data["kind"] == "downtime" && data["dismissible"] == "false")
        #expect(data["expires_at"] == String(message.timestamp + 3_600_000))
        let sent = try Self.message(request)
        #expect((sent["android"] as? [String: Any])?["ttl"] as? String == "3000s")
        let headers = (sent["apns"] as? [String: Any])?["headers"] as? [String: String]
        #expect(headers?["apns-expiration"] == String((message.timestamp + 3_600_000) / 1000))
        // A general, dismissible message carries neither key.
        message.kind = "general"
        message.dismissible = true
        let general = try Self.data(try #require(FCMMapping.requests(for: message).first))
        #expect(general["kind"] == nil && general["dismissible"] == nil)
    }

    @Test func posterFieldsAreWhatJSONEncoderWritesByteForByte() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let url = "https://school.example/p/a b.png"
        let wire = Wire.Message(
            topic: "t", notification: Wire.Notification(title: "t", body: "b", image: url), data: ["image": url],
            android: Wire.Android(
                priority: "HIGH", ttl: "60s",
                notification: .init(sound: "default", channelID: "msi_active", image: url)),
            apns: Wire.APNS(
                headers: ["apns-priority": "10"],
                payload: .init(
                    aps: .init(
                        sound: "default", contentAvailable: nil,
                        interruptionLevel: "active", relevanceScore: 0.5,
                        mutableContent: 1)),
                fcmOptions: .init(image: url)))
        #expect(FCMJSON.bytes(wire.json) == Array(try encoder.encode(wire)))
    }

    // MARK: Not shown

    @Test(arguments: [RelayMessage.Distribution.alert, .information])
    func aMessageNotShownIsOneDataRequestWithoutANotificationAnywhere(distribution: RelayMessage.Distribution) throws {
        for translations in [[], Translations.two] {
            var message = Translations.message(distribution, translations)
            message.display = false
            message.data = ["flag.new_timetable": "on"]
            message.image = "https://school.example/p.png"
            let requests = FCMMapping.requests(for: message, excluding: ["q1"])
            let only = try #require(requests.first)
            #expect(requests.count == 1 && only.component == .data)
            let body = String(decoding: only.body, as: UTF8.self)
            #expect(!body.contains("\"notification\"") && !body.contains("fcm_options"))
            let sent = try Self.message(only)
            let apns = try #require(sent["apns"] as? [String: Any])
            #expect(apns["headers"] as? [String: String] == ["apns-push-type": "background", "apns-priority": "5"])
            let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
            #expect(aps?.count == 1 && (aps?["content-available"] as? NSNumber)?.intValue == 1)
            #expect((sent["android"] as? [String: Any])?["priority"] as? String == "NORMAL")
            let data = try Self.data(only)
            #expect(data["display"] == "false" && data["flag.new_timetable"] == "on")
            // The device's own send is a data message too.
            let device = FCMMapping.deviceRequest(for: message, token: "t", audience: .person, language: "hi")
            #expect(try Self.message(device)["notification"] == nil)
            #expect(FCMMapping.requests(for: message, token: "t", language: "hi").count == 1)
        }
    }

    @Test(arguments: [
        (RelayMessage.Urgency.passive, "NORMAL"), (.active, "NORMAL"), (.timeSensitive, "HIGH"),
        (.critical, "HIGH"),
    ])
    func aMessageNotShownWakesAnAndroidPhoneOnlyWhenUrgent(urgency: RelayMessage.Urgency, priority: String) throws {
        var message = RelayMessage.sample(.alert)
        message.display = false
        message.urgency = urgency
        let request = try #require(FCMMapping.requests(for: message).first)
        #expect((try Self.message(request)["android"] as? [String: Any])?["priority"] as? String == priority)
    }

    // MARK: Compatibility

    @Test func aMessageWithoutTheNewFieldsIsByteForByteWhatItWas() throws {
        // The defaults, and the values that mean the same (kind "general", dismissible, shown), change no byte.
        for distribution in RelayMessage.Distribution.allCases {
            let plain = RelayMessage.sample(distribution, ttlSeconds: 600)
            var same = plain
            same.kind = "general"
            same.sendingAt = plain.timestamp + 60_000
            #expect(FCMMapping.requests(for: plain) == FCMMapping.requests(for: same))
            #expect(
                FCMMapping.requests(for: plain, token: "t")
                    == FCMMapping.requests(for: same, token: "t", language: "hi"))
            #expect(
                FCMMapping.deviceRequest(for: plain, token: "t", audience: .person)
                    == FCMMapping.deviceRequest(for: same, token: "t", audience: .person, language: "hi-IN"))
            for request in FCMMapping.requests(for: plain, excluding: ["q1"]) {
                let keys = Set(try Self.data(request).keys)
                #expect(
                    keys.isDisjoint(with: [
                        "lang", "translations", "image", "kind", "dismissible", "display",
                        "expires_at",
                    ]))
            }
        }
    }

    // MARK: Sizes

    @Test func payloadSizesOfAnAlertWithZeroTwoAndSixTranslations() throws {
        var lines: [String] = []
        for translations in [[], Translations.two, Translations.six] {
            let requests = FCMMapping.requests(for: Translations.message(.alert, translations))
            for request in requests {
                #expect(request.payloadSize <= FCMMappingOptions.defaultPayloadLimit && !request.isTruncated)
                lines.append(
                    "\(translations.count) translations, \(request.component): "
                        + "payload \(request.payloadSize) B, body \(request.body.count) B")
            }
            lines.append(
                "\(translations.count) translations: \(requests.count) requests, "
                    + "\(requests.map(\.body.count).reduce(0, +)) B of bodies")
        }
        print(lines.joined(separator: "\n"))
    }
}

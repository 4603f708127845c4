import Foundation
import HubModel
import Testing

@testable import FCM

@Suite("FCM mapping")
struct MappingTests {
    let topic = "65f1c0ffee000000000000aa-65f1c0ffee000000000000bb-65f1c0ffee000000000000cc"

    @Test func alertGivesTheNotificationComponentThenTheDataComponentFieldByField() throws {
        let requests = FCMMapping.requests(for: .sample(.alert))
        try #require(requests.count == 2)
        #expect(requests.map(\.component) == [.notification, .data])

        let notification: [String: Any] = [
            "message": [
                "topic": topic,
                "notification": ["title": "Snow day", "body": "School is closed today"],
                "data": ["msi_key": "65f1c0ffee00000000000001", "urgency": "active"],
                // The message's key identifies the pop-up on both platforms: a correction replaces it.
                "android": [
                    "priority": "HIGH",
                    "notification": [
                        "sound": "default", "channel_id": "msi_active",
                        "tag": "65f1c0ffee00000000000001",
                    ],
                ],
                "apns": [
                    "headers": ["apns-priority": "10", "apns-collapse-id": "65f1c0ffee00000000000001"],
                    "payload": [
                        "aps": [
                            "sound": "default", "interruption-level": "active", "relevance-score": 0.5,
                        ] as [String: Any]
                    ],
                ],
            ] as [String: Any]
        ]
        #expect(JSON.canonical(requests[0].body) == JSON.canonical(notification))
        #expect(JSON.canonical(requests[1].body) == JSON.canonical(expectedDataComponent(dist: "Alert")))
        #expect(requests.allSatisfy { !$0.isTruncated })
    }

    @Test func informationGivesTheDataComponentAlone() throws {
        let requests = FCMMapping.requests(for: .sample(.information, desc: ""))
        let only = try #require(requests.first)
        #expect(requests.count == 1)
        #expect(only.component == .data)
        #expect(JSON.canonical(only.body) == JSON.canonical(expectedDataComponent(dist: "Information", desc: "")))
    }

    @Test func dataComponentIsAnAPNsBackgroundPushWithPriorityFive() throws {
        let data = try #require(FCMMapping.requests(for: .sample(.information)).first)
        let message = try #require(JSON.object(data.body)["message"] as? [String: Any])
        let apns = try #require(message["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-push-type": "background", "apns-priority": "5"])
        let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect((aps?["content-available"] as? NSNumber)?.intValue == 1)
        #expect(message["notification"] == nil)
        #expect((message["android"] as? [String: Any])?["priority"] as? String == "HIGH")
    }

    @Test func everyDataValueIsAStringAndTheTimestampItsDecimalDigits() throws {
        for request in FCMMapping.requests(for: .sample(.alert)) {
            let message = try #require(JSON.object(request.body)["message"] as? [String: Any])
            let data = try #require(message["data"] as? [String: Any])
            #expect(data.values.allSatisfy { $0 is String })
            if request.component == .data {
                #expect(data["timestamp"] as? String == "1700000000123")
            }
        }
    }

    @Test func validateModeSetsValidateOnlyAndSendModeLeavesItOut() {
        let validating = FCMMapping.requests(for: .sample(.alert), options: .init(validateOnly: true))
        #expect(validating.allSatisfy { JSON.object($0.body)["validate_only"] as? Bool == true })
        let sending = FCMMapping.requests(for: .sample(.alert))
        #expect(sending.allSatisfy { JSON.object($0.body)["validate_only"] == nil })
    }

    @Test func ttlBecomesAndroidTTLAndAPNsExpirationOnBothComponents() throws {
        let requests = FCMMapping.requests(for: .sample(.alert, ttlSeconds: 3600))
        for request in requests {
            let message = try #require(JSON.object(request.body)["message"] as? [String: Any])
            #expect((message["android"] as? [String: Any])?["ttl"] as? String == "3600s")
            let headers = (message["apns"] as? [String: Any])?["headers"] as? [String: String]
            // 1_700_000_000_123 ms + 3600 s, in Unix seconds.
            #expect(headers?["apns-expiration"] == "1700003600")
        }
    }

    @Test func withoutTTLThereIsNoAndroidTTLNorAPNsExpiration() throws {
        for request in FCMMapping.requests(for: .sample(.alert)) {
            let message = try #require(JSON.object(request.body)["message"] as? [String: Any])
            #expect((message["android"] as? [String: Any])?["ttl"] == nil)
            let headers = (message["apns"] as? [String: Any])?["headers"] as? [String: String]
            #expect(headers?["apns-expiration"] == nil)
        }
    }

    @Test func anExplicitExpiryIsTheAPNsExpirationAndTheTTLIsCappedAtFourWeeks() throws {
        var message = RelayMessage.sample(.information, ttlSeconds: 90 * 86_400)
        message.expiresAt = 1_700_000_500_000
        let body = try #require(FCMMapping.requests(for: message).first).body
        let wire = try #require(JSON.object(body)["message"] as? [String: Any])
        #expect((wire["android"] as? [String: Any])?["ttl"] as? String == "2419200s")
        let headers = (wire["apns"] as? [String: Any])?["headers"] as? [String: String]
        #expect(headers?["apns-expiration"] == "1700000500")
        #expect(message.isExpired(at: 1_700_000_500_000))
        #expect(!message.isExpired(at: 1_700_000_499_999))
    }

    @Test func aMessageWithinTheLimitIsSentWhole() throws {
        let request = try #require(FCMMapping.requests(for: .sample(.information)).first)
        let data = try #require((JSON.object(request.body)["message"] as? [String: Any])?["data"] as? [String: String])
        #expect(data["truncated"] == nil)
        #expect(!request.isTruncated)
        #expect(request.payloadSize == FCMMapping.payloadSize(data: data, notification: nil))
        #expect(request.payloadSize <= FCMMappingOptions.defaultPayloadLimit)
    }

    @Test(arguments: ["é", "日本語", "👩‍👩‍👧‍👦", "e\u{301}"])
    func anOversizedDataComponentIsCutAtACharacterBoundaryAndMarkedTruncated(unit: String) throws {
        let original = String(repeating: unit + "x", count: 1500)
        let request = try #require(FCMMapping.requests(for: .sample(.information, message: original)).first)
        let data = try #require((JSON.object(request.body)["message"] as? [String: Any])?["data"] as? [String: String])
        let cut = try #require(data["message"])

        #expect(request.isTruncated)
        #expect(data["truncated"] == "true")
        #expect(request.payloadSize <= FCMMappingOptions.defaultPayloadLimit)
        #expect(request.payloadSize == FCMMapping.payloadSize(data: data, notification: nil))
        // A prefix in whole characters: no grapheme split, no broken UTF-8.
        let kept = Array(cut)
        #expect(!kept.isEmpty && kept.count < Array(original).count)
        #expect(Array(original).starts(with: kept))
        // The longest such prefix: one more character would not fit.
        var longer = data
        longer["message"] = String(Array(original)[...kept.count])
        #expect(FCMMapping.payloadSize(data: longer, notification: nil) > FCMMappingOptions.defaultPayloadLimit)
        // The other fields are untouched.
        #expect(data["title"] == "Snow day" && data["timestamp"] == "1700000000123")
    }

    @Test func thePayloadLimitIsConfigurable() throws {
        let options = FCMMappingOptions(payloadLimit: 600)
        let message = RelayMessage.sample(.alert, message: String(repeating: "ü", count: 1000))
        let requests = FCMMapping.requests(for: message, options: options)
        let data = try #require(requests.last)
        #expect(data.isTruncated && data.payloadSize <= 600 && data.payloadSize > 500)
        #expect(requests.first?.isTruncated == false)
    }

    @Test func whenTheMessageAloneCannotMakeRoomDescAndTitleAreCutToo() throws {
        let huge = String(repeating: "語", count: 500)
        let message = RelayMessage.sample(.alert, title: huge, desc: huge, message: huge)
        let requests = FCMMapping.requests(for: message)
        for request in requests {
            #expect(request.isTruncated)
            #expect(request.payloadSize <= FCMMappingOptions.defaultPayloadLimit)
        }
        let dataMessage = JSON.object(requests[1].body)["message"] as? [String: Any]
        let data = try #require(dataMessage?["data"] as? [String: String])
        #expect(data["message"] == "")
        #expect(data["msi_key"] == "65f1c0ffee00000000000001" && data["truncated"] == "true")
        let notification = try #require(
            (JSON.object(requests[0].body)["message"] as? [String: Any])?["notification"]
                as? [String: String])
        #expect(huge.hasPrefix(notification["title"] ?? "x") && huge.hasPrefix(notification["body"] ?? "x"))
    }

    @Test func theMappingIsPure() {
        let message = RelayMessage.sample(.alert, message: String(repeating: "ß", count: 2000), ttlSeconds: 60)
        #expect(FCMMapping.requests(for: message) == FCMMapping.requests(for: message))
    }

    private func expectedDataComponent(dist: String, desc: String = "School is closed today") -> [String: Any] {
        [
            "message": [
                "topic": topic,
                "data": [
                    "msi_key": "65f1c0ffee00000000000001",
                    "topic_key": topic,
                    "dist": dist,
                    "title": "Snow day",
                    "desc": desc,
                    "message": "All schools in the district are closed on Monday because of snow.",
                    "timestamp": "1700000000123",
                    "urgency": "active",
                ],
                "android": ["priority": "HIGH"],
                "apns": [
                    "headers": ["apns-push-type": "background", "apns-priority": "5"],
                    "payload": ["aps": ["content-available": 1]],
                ] as [String: Any],
            ] as [String: Any]
        ]
    }
}

@Suite("FCM request JSON")
struct FCMJSONTests {
    /// Text with every character class the writer treats apart: controls, quotes, backslash, slash, DEL,
    /// accents, emoji, line and paragraph separators, a byte-order mark.
    static let awkward =
        (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }.joined()
        + "\"quoted\" back\\slash a/b \u{7F} café 📚 \u{2028}\u{2029}\u{FEFF} end"

    @Test(arguments: [false, true])
    func everyRequestIsWhatJSONEncoderWritesByteForByte(validateOnly: Bool) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for distribution in [RelayMessage.Distribution.alert, .information] {
            for ttl in [nil, 0, 3600] as [Int64?] {
                let message = RelayMessage.sample(
                    distribution, title: Self.awkward, desc: Self.awkward,
                    message: Self.awkward, ttlSeconds: ttl)
                let options = FCMMappingOptions(validateOnly: validateOnly)
                for request in FCMMapping.requests(for: message, options: options) {
                    let decoded = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
                    #expect(decoded?["message"] != nil)
                }
                let wire = Wire.SendRequest(
                    message: Wire.Message(
                        topic: Self.awkward, notification: Wire.Notification(title: Self.awkward, body: "b"),
                        data: ["msi_key": Self.awkward, "z": "", "a": "/"],
                        android: Wire.Android(
                            priority: "HIGH", ttl: ttl.map { "\($0)s" },
                            notification: .init(sound: "default")),
                        apns: Wire.APNS(
                            headers: ["apns-priority": "5", "apns-expiration": "0"],
                            payload: .init(
                                aps: .init(
                                    sound: ttl == nil ? nil : "default", contentAvailable: 1,
                                    threadID: Self.awkward, category: "MSI_ACK_2")))),
                    validateOnly: validateOnly ? true : nil)
                #expect(FCMJSON.bytes(wire.json) == Array(try encoder.encode(wire)))
                let bare = Wire.Message(
                    topic: "t", notification: nil, data: [:],
                    android: Wire.Android(priority: "HIGH", ttl: nil, notification: nil),
                    apns: Wire.APNS(
                        headers: [:],
                        payload: .init(
                            aps: .init(sound: nil, contentAvailable: nil))))
                #expect(FCMJSON.bytes(bare.json) == Array(try encoder.encode(bare)))
            }
        }
    }
}

@Suite("FCM mapping of urgency")
struct UrgencyMappingTests {
    /// What each urgency gives an Alert's pop-up: APNs priority, interruption level and relevance, Android priority
    /// and channel (without the critical-alert entitlement: critical goes to APNs as time-sensitive).
    static let table:
        [(
            RelayMessage.Urgency, apnsPriority: String, level: String, score: Double, android: String,
            channel: String
        )] = [
            (.passive, "5", "passive", 0.2, "NORMAL", "msi_passive"),
            (.active, "10", "active", 0.5, "HIGH", "msi_active"),
            (.timeSensitive, "10", "time-sensitive", 0.8, "HIGH", "msi_time_sensitive"),
            (.critical, "10", "time-sensitive", 1.0, "HIGH", "msi_critical"),
        ]

    static func message(_ urgency: RelayMessage.Urgency, _ distribution: RelayMessage.Distribution = .alert)
        -> RelayMessage
    {
        var message = RelayMessage.sample(distribution)
        message.urgency = urgency
        return message
    }

    /// The parts of a request body the urgency sets.
    struct Parts {
        var message: [String: Any]
        var headers: [String: String] { (message["apns"] as? [String: Any])?["headers"] as? [String: String] ?? [:] }
        var aps: [String: Any] {
            ((message["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"] as? [String: Any] ?? [:]
        }
        var android: [String: Any] { message["android"] as? [String: Any] ?? [:] }
        var channel: String? { (android["notification"] as? [String: Any])?["channel_id"] as? String }
        var data: [String: String] { message["data"] as? [String: String] ?? [:] }

        init(_ request: FCMRequest) throws {
            message = try #require(JSON.object(request.body)["message"] as? [String: Any])
        }
    }

    @Test(arguments: 0..<4)
    func eachUrgencyReachesAnAlertsPopUpOnBothPlatforms(row: Int) throws {
        let (urgency, priority, level, score, android, channel) = Self.table[row]
        let requests = FCMMapping.requests(for: Self.message(urgency))
        let popUp = try Parts(try #require(requests.first))
        #expect(popUp.headers["apns-priority"] == priority)
        #expect(popUp.aps["interruption-level"] as? String == level)
        #expect((popUp.aps["relevance-score"] as? NSNumber)?.doubleValue == score)
        #expect(popUp.android["priority"] as? String == android)
        #expect(popUp.channel == channel)
        #expect(popUp.data["urgency"] == urgency.rawValue)
        // A passive pop-up plays no sound; the others the default one (critical without the entitlement too).
        #expect((popUp.aps["sound"] as? String) == (urgency == .passive ? nil : "default"))
        // The data component stays a background push (APNs takes it only at priority 5), without a level.
        let data = try Parts(try #require(requests.last))
        #expect(data.headers == ["apns-push-type": "background", "apns-priority": "5"])
        #expect(data.aps["interruption-level"] == nil && data.channel == nil)
        #expect(data.android["priority"] as? String == android)
        #expect(data.data["urgency"] == urgency.rawValue)
    }

    @Test(arguments: 0..<4)
    func eachUrgencyReachesADevicesSendOnBothPlatforms(row: Int) throws {
        let (urgency, priority, level, score, android, channel) = Self.table[row]
        var message = DeviceMappingTests.addressed(.alert)
        message.urgency = urgency
        let alert = try Parts(FCMMapping.deviceRequest(for: message, token: "t", audience: .person))
        #expect(alert.headers["apns-priority"] == priority)
        #expect(alert.aps["interruption-level"] as? String == level)
        #expect((alert.aps["relevance-score"] as? NSNumber)?.doubleValue == score)
        #expect(alert.android["priority"] as? String == android && alert.channel == channel)
        #expect(alert.data["urgency"] == urgency.rawValue)
        message.distribution = .information
        let information = try Parts(FCMMapping.deviceRequest(for: message, token: "t", audience: .person))
        #expect(information.headers == ["apns-push-type": "background", "apns-priority": "5"])
        #expect(information.aps["interruption-level"] == nil && information.message["notification"] == nil)
        #expect(information.android["priority"] as? String == android && information.channel == nil)
        #expect(information.data["urgency"] == urgency.rawValue)
    }

    @Test func criticalIsCriticalForAPNsOnlyWithTheEntitlement() throws {
        let entitled = FCMMappingOptions(criticalAlerts: true)
        let topic = try Parts(try #require(FCMMapping.requests(for: Self.message(.critical), options: entitled).first))
        var addressed = DeviceMappingTests.addressed(.alert)
        addressed.urgency = .critical
        let device = try Parts(
            FCMMapping.deviceRequest(for: addressed, token: "t", audience: .person, options: entitled))
        for parts in [topic, device] {
            #expect(parts.aps["interruption-level"] as? String == "critical")
            let sound = try #require(parts.aps["sound"] as? [String: Any])
            #expect((sound["critical"] as? NSNumber)?.intValue == 1 && sound["name"] as? String == "default")
            #expect((sound["volume"] as? NSNumber)?.doubleValue == 1.0)
            #expect(parts.headers["apns-priority"] == "10" && parts.channel == "msi_critical")
        }
        let plain = try Parts(try #require(FCMMapping.requests(for: Self.message(.critical)).first))
        #expect(
            plain.aps["interruption-level"] as? String == "time-sensitive" && plain.aps["sound"] as? String == "default"
        )
        #expect(plain.data["urgency"] == "critical")
    }

    @Test func theChannelsAreConfigurable() throws {
        let channels = FCMMappingOptions.AndroidChannels(
            passive: "quiet", active: "news", timeSensitive: "urgent",
            critical: "alarm")
        let options = FCMMappingOptions(androidChannels: channels)
        let found = try RelayMessage.Urgency.allCases.map {
            try Parts(try #require(FCMMapping.requests(for: Self.message($0), options: options).first)).channel
        }
        #expect(found == ["quiet", "news", "urgent", "alarm"])
    }

    @Test func aResendGoesOneLevelUpAndAtLeastTimeSensitive() {
        #expect(
            RelayMessage.Urgency.allCases.map(\.escalated) == [.timeSensitive, .timeSensitive, .critical, .critical])
        #expect(RelayMessage.Urgency.passive < .active && RelayMessage.Urgency.timeSensitive < .critical)
    }

    @Test func quietTopicsAreLeftOutByACondition() throws {
        let message = Self.message(.active)
        let requests = FCMMapping.requests(for: message, excluding: ["quiet-aaaaaaaaaaaa", "quiet-bbbbbbbbbbbb"])
        #expect(requests.count == 2)
        for request in requests {
            let parts = try Parts(request)
            #expect(parts.message["topic"] == nil)
            #expect(
                parts.message["condition"] as? String == "'\(message.topicKey)' in topics && "
                    + "!('quiet-aaaaaaaaaaaa' in topics) && !('quiet-bbbbbbbbbbbb' in topics)")
        }
        // FCM takes five topics in a condition: the fifth and later windows cannot be left out.
        let many = (1...6).map { "quiet-\($0)" }
        let condition = FCMMapping.condition(topic: "t", excluding: many)
        #expect(
            condition == "'t' in topics && !('quiet-1' in topics) && !('quiet-2' in topics) && "
                + "!('quiet-3' in topics) && !('quiet-4' in topics)")
        // Without exclusions the topic is the target, as before.
        #expect(
            try Parts(try #require(FCMMapping.requests(for: message).first)).message["topic"] as? String
                == message.topicKey)
    }

    @Test func aHeldBackTopicMessageGoesToTheTokenWithTheSameComponents() throws {
        let message = Self.message(.active)
        let byToken = FCMMapping.requests(for: message, token: "registration-1")
        let byTopic = FCMMapping.requests(for: message)
        #expect(byToken.map(\.component) == [.notification, .data])
        for (token, topic) in zip(byToken, byTopic) {
            var parts = try Parts(token)
            #expect(parts.message["token"] as? String == "registration-1" && parts.message["topic"] == nil)
            parts.message["token"] = nil
            parts.message["topic"] = message.topicKey
            #expect(JSON.canonical(parts.message) == JSON.canonical(try Parts(topic).message))
        }
    }

    @Test func urgencyFieldsAreWhatJSONEncoderWritesByteForByte() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (sound, score) in [
            (Wire.Sound.critical(name: "default", volume: 1.0), 1.0), ("default", 0.2),
            (.critical(name: "siren.caf", volume: 0.5), 0.8),
        ] {
            let wire = Wire.Message(
                condition: "'a' in topics && !('b' in topics)",
                notification: Wire.Notification(title: "t", body: "b"), data: ["urgency": "critical"],
                android: Wire.Android(
                    priority: "NORMAL", ttl: nil,
                    notification: .init(sound: "default", channelID: "msi_critical")),
                apns: Wire.APNS(
                    headers: ["apns-priority": "10"],
                    payload: .init(
                        aps: .init(
                            sound: sound, contentAvailable: nil, interruptionLevel: "critical", relevanceScore: score)))
            )
            #expect(FCMJSON.bytes(wire.json) == Array(try encoder.encode(wire)))
        }
    }
}

// MARK: Acknowledgement requested

extension MappingTests {
    /// The sample Alert (or Information) asking for an acknowledgement with `responses`.
    static func asking(
        _ responses: [String], _ distribution: RelayMessage.Distribution = .alert,
        message text: String = "All schools are closed."
    ) -> RelayMessage {
        var message = RelayMessage.sample(distribution, message: text)
        message.ackResponses = responses
        return message
    }

    static func data(_ request: FCMRequest) throws -> [String: String] {
        try #require((JSON.object(request.body)["message"] as? [String: Any])?["data"] as? [String: String])
    }

    /// `ack_responses` parsed back as the phone parses it.
    static func responses(_ data: [String: String]) throws -> [String] {
        let text = try #require(data["ack_responses"])
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String])
    }

    @Test func anAckRequestReachesBothComponentsWithItsResponsesAndThePopUpItsCategory() throws {
        let requests = FCMMapping.requests(for: Self.asking(["I'm safe", "I need help"]))
        #expect(requests.map(\.component) == [.notification, .data])
        // The pop-up carries the responses for Android's actions and the category of two for iOS's.
        let popUp = try Self.data(requests[0])
        #expect(popUp["ack"] == "1" && popUp["ack_responses"] == #"["I'm safe","I need help"]"#)
        let aps = try #require(
            ((try NoticeMappingTests.message(requests[0])["apns"] as? [String: Any])?["payload"] as? [String: Any])?[
                "aps"]
                as? [String: Any])
        #expect(aps["category"] as? String == "MSI_ACK_2")
        let data = try Self.data(requests[1])
        #expect(data["ack"] == "1")
        #expect(data["ack_responses"] == #"["I'm safe","I need help"]"#)
        #expect(try Self.responses(data) == ["I'm safe", "I need help"])
        #expect(requests.allSatisfy { !$0.isTruncated })
        #expect(requests[1].payloadSize == FCMMapping.payloadSize(data: data, notification: nil))
    }

    @Test func aPlainAckSendsAnEmptyListAndAnInformationCarriesItToo() throws {
        let request = try #require(FCMMapping.requests(for: Self.asking([], .information)).first)
        let data = try Self.data(request)
        #expect(data["ack"] == "1" && data["ack_responses"] == "[]")
    }

    @Test func withoutAnAckRequestNoRequestCarriesAckKeys() throws {
        for distribution in RelayMessage.Distribution.allCases {
            for request in FCMMapping.requests(for: .sample(distribution)) {
                let data = try Self.data(request)
                #expect(data["ack"] == nil && data["ack_responses"] == nil)
            }
        }
    }

    @Test func responsesWithQuotesAndBackslashesSurviveAsJSON() throws {
        let odd = [#"say "yes""#, #"C:\path"#, "line\nbreak", "日本語 👩‍👩‍👧‍👦"]
        let request = try #require(FCMMapping.requests(for: Self.asking(odd, .information)).first)
        #expect(try Self.responses(Self.data(request)) == odd)
    }

    @Test func theAckKeysCountTowardThePayloadLimitAndTheTextsAreCutForThem() throws {
        let responses = (1...10).map { "Answer \($0) " + String(repeating: "x", count: 80) }
        let options = FCMMappingOptions(payloadLimit: 2_048)
        let long = String(repeating: "é", count: 1_500)
        let request = try #require(
            FCMMapping.requests(
                for: Self.asking(responses, .information, message: long),
                options: options
            ).first)
        let data = try Self.data(request)
        #expect(request.isTruncated && request.payloadSize <= 2_048)
        #expect(request.payloadSize == FCMMapping.payloadSize(data: data, notification: nil))
        #expect(try Self.responses(data) == responses)
        #expect((data["message"] ?? "").count < long.count)
    }

    @Test func responsesTooLargeForThePayloadAreLeftOutAndTheFlagStays() throws {
        let responses = (1...10).map { String(repeating: "語", count: 99) + "\($0)" }
        let options = FCMMappingOptions(payloadLimit: 1_024)
        let request = try #require(
            FCMMapping.requests(for: Self.asking(responses, .information), options: options)
                .first)
        let data = try Self.data(request)
        #expect(request.isTruncated && request.payloadSize <= 1_024)
        #expect(data["ack"] == "1" && data["ack_responses"] == nil && data["truncated"] == "true")
    }
}

/// The requests that tell phones about a message they have: a correction under the original's identity, a withdrawal
/// in the background.
@Suite("FCM mapping of corrections and withdrawals")
struct NoticeMappingTests {
    /// The body's `message` object.
    static func message(_ request: FCMRequest) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        return try #require(object?["message"] as? [String: Any])
    }

    @Test func aCorrectionCarriesTheSameTagAndCollapseIDAndTheNewTexts() throws {
        var message = RelayMessage.sample(.alert)
        message.title = "Snow day: corrected"
        let request = FCMMapping.noticeRequest(
            .correction, for: message, topic: message.topicKey,
            component: FCMComponent(rawValue: "correction-1"))
        #expect(request.component.rawValue == "correction-1")
        let wire = try Self.message(request)
        #expect(wire["topic"] as? String == message.topicKey)
        #expect((wire["notification"] as? [String: Any])?["title"] as? String == "Snow day: corrected")
        let tag = ((wire["android"] as? [String: Any])?["notification"] as? [String: Any])?["tag"] as? String
        let headers = (wire["apns"] as? [String: Any])?["headers"] as? [String: String]
        #expect(tag == message.msiKey && headers?["apns-collapse-id"] == message.msiKey)
        let data = try #require(wire["data"] as? [String: String])
        #expect(
            data["msi_key"] == message.msiKey && data["correction"] == "1" && data["title"] == "Snow day: corrected")
        #expect(data["message"] == message.message && data["topic_key"] == message.topicKey)
    }

    @Test func aWithdrawalIsADataMessageInTheBackground() throws {
        let message = RelayMessage.sample(.alert)
        let request = FCMMapping.noticeRequest(
            .withdrawal, for: message, token: "device-1",
            component: FCMComponent(rawValue: "withdrawal"))
        let wire = try Self.message(request)
        #expect(wire["notification"] == nil && wire["token"] as? String == "device-1")
        #expect((wire["android"] as? [String: Any])?["notification"] == nil)
        let headers = (wire["apns"] as? [String: Any])?["headers"] as? [String: String]
        #expect(headers?["apns-push-type"] == "background" && headers?["apns-priority"] == "5")
        #expect(wire["data"] as? [String: String] == ["msi_key": message.msiKey, "withdrawn": "1"])
    }
}

// MARK: Rooms

@Suite("FCM mapping of a room's messages")
struct RoomMappingTests {
    static func posted(in room: String?) -> RelayMessage {
        var message = RelayMessage.sample(.alert, message: "Board 3 is free")
        message.room = room
        return message
    }

    @Test func aRoomsMessageSharesTheRoomsThreadOnBothPlatformsAndNamesTheRoomInItsData() throws {
        let requests = FCMMapping.requests(for: Self.posted(in: "chess-team"), token: "tok")
        #expect(requests.map(\.component) == [.notification, .data])
        let popUp = try NoticeMappingTests.message(requests[0])
        let android = try #require(popUp["android"] as? [String: Any])
        #expect((android["notification"] as? [String: Any])?["tag"] as? String == "chess-team")
        let apns = try #require(popUp["apns"] as? [String: Any])
        #expect((apns["headers"] as? [String: String])?["apns-collapse-id"] == "chess-team")
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["thread-id"] as? String == "chess-team")
        #expect(aps["category"] == nil)
        for request in requests { #expect(try MappingTests.data(request)["group"] == "chess-team") }
    }

    @Test func anyOtherMessageKeepsItsOwnTagAndNoThread() throws {
        let message = Self.posted(in: nil)
        let requests = FCMMapping.requests(for: message, token: "tok")
        let popUp = try NoticeMappingTests.message(requests[0])
        let android = try #require(popUp["android"] as? [String: Any])
        #expect((android["notification"] as? [String: Any])?["tag"] as? String == message.msiKey)
        let aps = try #require(
            ((popUp["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["thread-id"] == nil)
        for request in requests { #expect(try MappingTests.data(request)["group"] == nil) }
    }
}

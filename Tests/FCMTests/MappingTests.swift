import Foundation
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
                "data": ["msi_key": "65f1c0ffee00000000000001"],
                "android": ["priority": "HIGH", "notification": ["sound": "default"]],
                "apns": ["headers": ["apns-priority": "10"], "payload": ["aps": ["sound": "default"]]],
            ] as [String: Any],
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
        let notification = try #require((JSON.object(requests[0].body)["message"] as? [String: Any])?["notification"]
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
                ],
                "android": ["priority": "HIGH"],
                "apns": [
                    "headers": ["apns-push-type": "background", "apns-priority": "5"],
                    "payload": ["aps": ["content-available": 1]],
                ] as [String: Any],
            ] as [String: Any],
        ]
    }
}

@Suite("FCM request JSON")
struct FCMJSONTests {
    /// Text with every character class the writer treats apart: controls, quotes, backslash, slash, DEL,
    /// accents, emoji, line and paragraph separators, a byte-order mark.
    static let awkward = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }.joined()
        + "\"quoted\" back\\slash a/b \u{7F} café 📚 \u{2028}\u{2029}\u{FEFF} end"

    @Test(arguments: [false, true])
    func everyRequestIsWhatJSONEncoderWritesByteForByte(validateOnly: Bool) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for distribution in [RelayMessage.Distribution.alert, .information] {
            for ttl in [nil, 0, 3600] as [Int64?] {
                let message = RelayMessage.sample(distribution, title: Self.awkward, desc: Self.awkward,
                                                  message: Self.awkward, ttlSeconds: ttl)
                let options = FCMMappingOptions(validateOnly: validateOnly)
                for request in FCMMapping.requests(for: message, options: options) {
                    let decoded = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
                    #expect(decoded?["message"] != nil)
                }
                let wire = Wire.SendRequest(message: Wire.Message(
                    topic: Self.awkward, notification: Wire.Notification(title: Self.awkward, body: "b"),
                    data: ["msi_key": Self.awkward, "z": "", "a": "/"],
                    android: Wire.Android(priority: "HIGH", ttl: ttl.map { "\($0)s" },
                                          notification: .init(sound: "default")),
                    apns: Wire.APNS(headers: ["apns-priority": "5", "apns-expiration": "0"], payload: .init(
                        aps: .init(sound: ttl == nil ? nil : "default", contentAvailable: 1)))),
                    validateOnly: validateOnly ? true : nil)
                #expect(FCMJSON.bytes(wire.json) == Array(try encoder.encode(wire)))
                let bare = Wire.Message(topic: "t", notification: nil, data: [:],
                                        android: Wire.Android(priority: "HIGH", ttl: nil, notification: nil),
                                        apns: Wire.APNS(headers: [:], payload: .init(
                                            aps: .init(sound: nil, contentAvailable: nil))))
                #expect(FCMJSON.bytes(bare.json) == Array(try encoder.encode(bare)))
            }
        }
    }
}

import Foundation
import HubModel
import Testing

@testable import FCM

/// A message to persons and groups: one request per device, to its registration token.
@Suite("FCM mapping of a device's send")
struct DeviceMappingTests {
    static let token = "device-registration-token-1"

    /// The sample message addressed to persons (no topic), with the sender's data.
    static func addressed(
        _ distribution: RelayMessage.Distribution, message text: String = "All schools are closed.",
        data: [String: String] = ["room": "chess-club", "link": "msi://rooms/chess-club"]
    )
        -> RelayMessage
    {
        var message = RelayMessage.sample(distribution, message: text)
        message.topicKey = ""
        message.data = data
        return message
    }

    @Test func anAlertIsOneTokenRequestWithTheNotificationAndEveryDataKey() throws {
        let request = FCMMapping.deviceRequest(
            for: Self.addressed(.alert), token: Self.token,
            audience: .group("class-7b"))
        #expect(request.component == .device && !request.isTruncated)
        let expected: [String: Any] = [
            "message": [
                "token": Self.token,
                "notification": ["title": "Snow day", "body": "School is closed today"],
                "data": [
                    "msi_key": "65f1c0ffee00000000000001", "dist": "Alert", "title": "Snow day",
                    "desc": "School is closed today", "message": "All schools are closed.",
                    "timestamp": "1700000000123", "audience": "group", "group": "class-7b",
                    "room": "chess-club", "link": "msi://rooms/chess-club", "urgency": "active",
                ],
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
        #expect(JSON.canonical(request.body) == JSON.canonical(expected))
    }

    @Test func anInformationIsDataAloneAsABackgroundPushToAPerson() throws {
        let request = FCMMapping.deviceRequest(
            for: Self.addressed(.information, data: [:]), token: Self.token,
            audience: .person)
        let message = try #require(JSON.object(request.body)["message"] as? [String: Any])
        #expect(message["token"] as? String == Self.token && message["topic"] == nil)
        #expect(message["notification"] == nil)
        #expect(
            message["data"] as? [String: String] == [
                "msi_key": "65f1c0ffee00000000000001", "dist": "Information", "title": "Snow day",
                "desc": "School is closed today", "message": "All schools are closed.", "timestamp": "1700000000123",
                "audience": "person", "urgency": "active",
            ])
        let apns = try #require(message["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-push-type": "background", "apns-priority": "5"])
        let aps = (apns["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect((aps?["content-available"] as? NSNumber)?.intValue == 1)
        #expect((message["android"] as? [String: Any])?["notification"] == nil)
    }

    @Test func theHubsKeysWinOverTheSendersAndAPersonHasNoGroup() throws {
        let message = Self.addressed(.information, data: ["msi_key": "spoofed", "group": "spoofed", "room": "r1"])
        let request = FCMMapping.deviceRequest(for: message, token: Self.token, audience: .person)
        let data = try #require((JSON.object(request.body)["message"] as? [String: Any])?["data"] as? [String: String])
        #expect(data["msi_key"] == "65f1c0ffee00000000000001" && data["group"] == nil && data["room"] == "r1")
    }

    @Test func aLongTextIsCutToThePayloadLimitDataFirstThenThePopUp() throws {
        let long = String(repeating: "é", count: 3_000)
        let options = FCMMappingOptions(payloadLimit: 1_024)
        for distribution in RelayMessage.Distribution.allCases {
            let request = FCMMapping.deviceRequest(
                for: Self.addressed(distribution, message: long), token: Self.token,
                audience: .group("g"), options: options)
            #expect(request.isTruncated && request.payloadSize <= 1_024)
            let message = try #require(JSON.object(request.body)["message"] as? [String: Any])
            let data = try #require(message["data"] as? [String: String])
            #expect(data["truncated"] == "true" && data["room"] == "chess-club" && data["group"] == "g")
            #expect((data["message"] ?? "").count < long.count && long.hasPrefix(data["message"] ?? "x"))
            // The pop-up's short texts fit once the long message is cut: they are left whole.
            if distribution == .alert {
                let shown = message["notification"] as? [String: String]
                #expect(shown == ["title": "Snow day", "body": "School is closed today"])
            }
        }
    }

    @Test func theTTLReachesAndroidAndAPNsAsForATopic() throws {
        var message = Self.addressed(.alert)
        message.ttlSeconds = 600
        let request = FCMMapping.deviceRequest(for: message, token: Self.token, audience: .person)
        let body = try #require(JSON.object(request.body)["message"] as? [String: Any])
        #expect((body["android"] as? [String: Any])?["ttl"] as? String == "600s")
        let headers = (body["apns"] as? [String: Any])?["headers"] as? [String: String]
        #expect(headers?["apns-expiration"] == String((1_700_000_000_123 + 600_000) / 1000))
    }
}

// MARK: Acknowledgement requested

extension DeviceMappingTests {
    @Test func aDevicesSendCarriesTheAckRequestBesideTheSendersDataOnlyWhenAsked() throws {
        var asking = Self.addressed(.alert)
        asking.ackResponses = ["I'm safe", "I need help"]
        let request = FCMMapping.deviceRequest(for: asking, token: Self.token, audience: .person)
        let data = try MappingTests.data(request)
        #expect(data["ack"] == "1" && data["room"] == "chess-club" && data["audience"] == "person")
        #expect(try MappingTests.responses(data) == ["I'm safe", "I need help"])
        #expect(
            request.payloadSize
                == FCMMapping.payloadSize(
                    data: data, notification: Wire.Notification(title: "Snow day", body: "School is closed today")))

        for distribution in RelayMessage.Distribution.allCases {
            let plain = FCMMapping.deviceRequest(
                for: Self.addressed(distribution), token: Self.token,
                audience: .group("g"))
            let plainData = try MappingTests.data(plain)
            #expect(plainData["ack"] == nil && plainData["ack_responses"] == nil)
        }
    }

    @Test func aResendByTokenKeepsTheAckRequestAtTheEscalatedUrgency() throws {
        var resend = Self.addressed(.information, data: [:])
        resend.ackResponses = []
        resend.urgency = resend.urgency.escalated
        let data = try MappingTests.data(FCMMapping.deviceRequest(for: resend, token: Self.token, audience: .person))
        #expect(data["ack"] == "1" && data["ack_responses"] == "[]" && data["urgency"] == "time-sensitive")
    }

    @Test func aLongTextWithAnAckIsCutAndTheResponsesKept() throws {
        var asking = Self.addressed(.alert, message: String(repeating: "é", count: 3_000))
        asking.ackResponses = ["Yes", "No"]
        let options = FCMMappingOptions(payloadLimit: 1_024)
        let request = FCMMapping.deviceRequest(for: asking, token: Self.token, audience: .person, options: options)
        let data = try MappingTests.data(request)
        #expect(request.isTruncated && request.payloadSize <= 1_024)
        #expect(try MappingTests.responses(data) == ["Yes", "No"])
    }
}

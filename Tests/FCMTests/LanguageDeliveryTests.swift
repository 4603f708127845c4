import FakeFCM
import HubModel
import Testing

@testable import FCM

/// A translated Alert's requests sent to the fake FCM, which evaluates their conditions against its subscriptions
/// as FCM does: every phone of the topic gets exactly one pop-up, in its language or the main one.
@Suite("A translated Alert reaches each phone once, in its language")
struct LanguageDeliveryTests {
    static let topic = RelayMessage.sample(.alert).topicKey

    /// Phones of the topic with the hub's language topics, an app that subscribed itself (no language topic), one
    /// phone on a language topic but not the subject's, and one in its quiet hours.
    static let phones: [String: [String]] = [
        "phone-hi": [topic, "lang-hi"], "phone-ta": [topic, "lang-ta"], "phone-fr": [topic, "lang-fr"],
        "phone-self": [topic], "phone-en": [topic, "lang-en"], "phone-mr": [topic, "lang-mr"],
        "phone-other-subject": ["lang-hi"], "phone-quiet": [topic, "quiet-1", "lang-hi"],
    ]

    /// Sends `requests` through the FCM client and returns each phone's deliveries.
    static func deliver(_ requests: [FCMRequest], _ harness: FCMHarness) async throws -> [String: [FakeFCMDelivery]] {
        for (phone, topics) in phones {
            for topic in topics { harness.fake.forceSubscribe(phone, to: topic) }
        }
        let client = harness.fcmClient()
        for request in requests { _ = try await client.send(request) }
        var inboxes: [String: [FakeFCMDelivery]] = [:]
        for phone in phones.keys { inboxes[phone] = harness.fake.drainInbox(phone) }
        return inboxes
    }

    @Test func hindiAndTamilReachEveryPhoneOnceInThreeRequests() async throws {
        try await FCMHarness.with { harness in
            let requests = FCMMapping.requests(
                for: Translations.message(.alert, Translations.two),
                excluding: ["quiet-1"])
            #expect(requests.count == 3)
            let inboxes = try await Self.deliver(requests, harness)
            let titles = inboxes.mapValues { $0.map { $0.notification?.title ?? "-" } }
            #expect(
                titles == [
                    "phone-hi": ["हिम दिवस"], "phone-ta": ["பனி நாள்"], "phone-fr": ["Snow day"],
                    "phone-self": ["Snow day"], "phone-en": ["Snow day"], "phone-mr": ["Snow day"],
                    "phone-other-subject": [], "phone-quiet": [],
                ])
            #expect(inboxes["phone-hi"]?.first?.data["lang"] == "hi")
            #expect(inboxes["phone-fr"]?.first?.data["lang"] == "en")
        }
    }

    @Test func sixTranslationsStillReachEveryPhoneOnce() async throws {
        try await FCMHarness.with { harness in
            let requests = FCMMapping.requests(for: Translations.message(.alert, Translations.six))
            #expect(requests.count == 5)
            let inboxes = try await Self.deliver(requests, harness)
            let titles = inboxes.mapValues { $0.map { $0.notification?.title ?? "-" } }
            // Without quiet exclusions the quiet phone is sent to too, in Hindi; Marathi is past the budget.
            #expect(
                titles == [
                    "phone-hi": ["हिम दिवस"], "phone-ta": ["பனி நாள்"], "phone-fr": ["Jour de neige"],
                    "phone-self": ["Snow day"], "phone-en": ["Snow day"], "phone-mr": ["Snow day"],
                    "phone-other-subject": [], "phone-quiet": ["हिम दिवस"],
                ])
            // The Marathi phone has its text in the data, to show in the app.
            let marathi = try #require(inboxes["phone-mr"]?.first?.data["translations"])
            #expect(marathi.contains(#""mr":{"title":"बर्फाचा दिवस""#))
        }
    }

    @Test func sixTranslationsWithTwoQuietWindowsReachEveryPhoneOnceOrHoldItBack() async throws {
        try await FCMHarness.with { harness in
            let requests = FCMMapping.requests(
                for: Translations.message(.alert, Translations.six),
                excluding: ["quiet-1", "quiet-2"])
            #expect(requests.map(\.component.rawValue) == ["lang-hi", "lang-ta", "lang-default"])
            let inboxes = try await Self.deliver(requests, harness)
            let titles = inboxes.mapValues { $0.map { $0.notification?.title ?? "-" } }
            #expect(
                titles == [
                    "phone-hi": ["हिम दिवस"], "phone-ta": ["பனி நாள்"], "phone-fr": ["Snow day"],
                    "phone-self": ["Snow day"], "phone-en": ["Snow day"], "phone-mr": ["Snow day"],
                    "phone-other-subject": [], "phone-quiet": [],
                ])
        }
    }
}

import DAO
import FakeFCM
import FCM
import Foundation
import HubCore
import HubServer
import Mongo
import MongoTestSupport
import Testing

/// A translated Alert in the outbox: one component per language request, and a retry that sends only those FCM
/// has not taken, so no phone gets the message twice.
@Suite("Relaying a translated Alert", .tags(.faults))
struct TranslatedRelayTests {
    static let topic = Legacy.hoursTopic

    /// Stores an Alert in English with Hindi and Tamil translations, pending for any worker, as POST /message would.
    static func storeTranslatedAlert(in database: MongoDatabase) async throws -> Message {
        let now = UnixTime.nowMilliseconds()
        let plan = RelayPlan(dueAt: now, deadlineAt: now + 3_600_000, languages: ["hi", "ta"])
        let translations: BSONDocument = [
            "hi": ["title": "पुस्तकालय", "desc": "आज बंद", "message": "पुस्तकालय आज पूरे दिन बंद है।"],
            "ta": [
                "title": "நூலகம்", "desc": "இன்று மூடப்பட்டுள்ளது",
                "message": "நூலகம் இன்று முழுவதும் மூடப்பட்டுள்ளது.",
            ],
        ]
        return try await MessageDAO(database: database).add(
            MessageDraft(
                title: "Library", desc: "Closed today", message: "The library is closed all day.", topicKey: topic,
                distribution: .alert, sender: "test",
                extra: [
                    "relay": .document(plan.document(for: .alert)), "lang": "en",
                    "translations": .document(translations),
                ]))
    }

    @Test func thePlanHasOneComponentPerLanguageRequestAndNoDotInAName() {
        let plan = RelayPlan(dueAt: 1, deadlineAt: 2, languages: ["hi", "ta", "fr", "de", "es", "mr"])
        let components = plan.document(for: .alert)["components"]?.documentValue?.map(\.key)
        #expect(components == ["lang-hi", "lang-ta", "lang-fr", "lang-de", "lang-default"])
        #expect(
            RelayPlan(dueAt: 1, deadlineAt: 2, languages: ["hi"]).document(for: .information)["components"]?
                .documentValue?.map(\.key) == ["data"])
        let hidden = RelayPlan(dueAt: 1, deadlineAt: 2, languages: ["hi"], display: false)
        #expect(hidden.document(for: .alert)["components"]?.documentValue?.map(\.key) == ["data"])
        #expect(
            RelayPlan(dueAt: 1, deadlineAt: 2).document(for: .alert)["components"]?.documentValue?.map(\.key)
                == ["notification", "data"])
        #expect(RelayComponent(rawValue: "lang-hi.x") == nil && RelayComponent(rawValue: "lang-hi")?.language == "hi")
    }

    @Test func aRetryAfterA503OnOneLanguageSendsOnlyWhatFCMHasNotTaken() async throws {
        try await FakeFCM.with { fake in
            try await HubHarness.with(seed: HubHarness.legacy, relay: try RelayOutboxTests.relay(to: fake)) { hub in
                // Hindi is answered after a while; Tamil, sent next, meets the 503 set meanwhile.
                fake.setResponseDelay(.seconds(2))
                let stored = try await Self.storeTranslatedAlert(in: hub.database)
                #expect(stored.document[path: "relay.components.lang-hi.state"] == "pending")
                #expect(stored.document[path: "relay.components.lang-default.state"] == "pending")
                try await eventually { fake.received.count == 1 }
                fake.failNext(1, status: 503, retryAfter: "1")
                fake.setResponseDelay(nil)
                try await eventually { try await hub.relayState(stored.msiKey) == "sent" }

                #expect(fake.sendStatuses == [200, 503, 200, 200])
                let conditions = fake.received.map { $0.message["condition"] as? String }
                #expect(
                    conditions == [
                        "'\(Self.topic)' in topics && 'lang-hi' in topics",
                        "'\(Self.topic)' in topics && 'lang-ta' in topics",
                        "'\(Self.topic)' in topics && !('lang-hi' in topics) && !('lang-ta' in topics)",
                    ])
                #expect(
                    fake.received.map { ($0.message["notification"] as? [String: String])?["title"] }
                        == ["पुस्तकालय", "நூலகம்", "Library"])
                let message = try await hub.database.collection(CollectionName.message)
                    .findOne(["msi_key": .objectID(stored.msiKey)])
                let relay = try #require(message?["relay"]?.documentValue)
                #expect(relay[path: "components.lang-hi.state"] == "sent")
                #expect(relay[path: "components.lang-hi.attempts"]?.int64Value == 1)
                #expect(relay[path: "components.lang-ta.state"] == "sent")
                #expect(relay[path: "components.lang-ta.attempts"]?.int64Value == 2)
                #expect(relay[path: "components.lang-default.state"] == "sent")
                #expect(relay[path: "components.lang-default.attempts"]?.int64Value == 1)
                #expect(relay["attempts"]?.int64Value == 2)
            }
        }
    }
}

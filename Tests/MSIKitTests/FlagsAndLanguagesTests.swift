import Foundation
@testable import MSIKit
import Testing

/// Messages not shown (`display` false) set the flags and never enter the message list; a translated message is
/// stored in the device's language with its other texts kept; what a catch-up and a push carry of both.
@Suite("Flags and languages, in the app")
struct FlagsAndLanguagesTests {
    /// A clock the test moves.
    final class TestClock: @unchecked Sendable {
        // @unchecked: `now` is read and written only under `lock`.
        private let lock = NSLock()
        private var now: Date

        init(_ now: Date) { self.now = now }
        func read() -> Date { lock.withLock { now } }
        func set(_ date: Date) { lock.withLock { now = date } }
    }

    /// The changes `onChange` reported, in order.
    final class Changes: @unchecked Sendable {
        // @unchecked: `list` is read and written only under `lock`.
        private let lock = NSLock()
        private var list: [[FlagChange]] = []

        func append(_ changes: [FlagChange]) { lock.withLock { list.append(changes) } }
        var all: [[FlagChange]] { lock.withLock { list } }
    }

    static let now = milliseconds("2026-03-10T14:00:00Z")

    /// A client whose hub has nothing listening: every payload here is handled without the network.
    static func client(locale: String? = nil, clock: TestClock = TestClock(instant("2026-03-10T14:00:00Z"))) throws
        -> MSIClient
    {
        let configuration = MSIClient.Configuration(
            hub: URL(string: "http://127.0.0.1:9")!, directory: nil,
            locale: locale, clock: { clock.read() })
        return try MSIClient(configuration: configuration, push: SilentPush())
    }

    /// A non-display data component of a topic message, as the hub's FCM mapping sends it.
    static func background(key: String, at timestamp: Int64, data: [String: String], expiresAt: Int64? = nil)
        -> [String: String]
    {
        var payload = [
            "msi_key": key, "topic_key": "a-b-c", "dist": "Information", "title": "Flags", "desc": "", "message": "",
            "timestamp": String(timestamp), "urgency": "active", "display": "false",
        ]
        if let expiresAt { payload["expires_at"] = String(expiresAt) }
        return payload.merging(data) { hub, _ in hub }
    }

    @Test func aMessageNotShownSetsTheFlagsOnceAndNeverEntersTheMessageList() async throws {
        let clock = TestClock(instant("2026-03-10T14:00:00Z"))
        let client = try Self.client(clock: clock)
        let changes = Changes()
        client.flags.onChange { changes.append($0) }
        let expiry = Self.now + 3_600_000
        let payload = Self.background(
            key: "65f0c0ffee0000000000f001", at: Self.now - 10,
            data: ["new_quiz": "on", "theme": "b"], expiresAt: expiry)
        #expect(try await client.receive(payload: payload) == nil)
        #expect(try await client.store.messages().isEmpty)
        let flags = try await client.flags.all()
        #expect(flags.map(\.name) == ["new_quiz", "theme"] && flags.map(\.value) == ["on", "b"])
        #expect(flags.allSatisfy { $0.msiKey == "65f0c0ffee0000000000f001" && $0.setAt == Self.now - 10 })
        #expect(flags.first?.expiresAt == Date(timeIntervalSince1970: Double(expiry) / 1000))
        #expect(
            changes.all == [
                [
                    FlagChange(name: "new_quiz", oldValue: nil, newValue: "on"),
                    FlagChange(name: "theme", oldValue: nil, newValue: "b"),
                ]
            ])

        // The same message again (its other FCM request, or a catch-up) changes nothing.
        #expect(try await client.receive(payload: payload) == nil)
        #expect(changes.all.count == 1)
        // An older message arriving late does not override a newer one's value; a newer one does.
        _ = try await client.receive(
            payload: Self.background(
                key: "65f0c0ffee0000000000f002", at: Self.now - 20,
                data: ["new_quiz": "off"]))
        #expect(try await client.flags.value(of: "new_quiz") == "on")
        _ = try await client.receive(
            payload: Self.background(
                key: "65f0c0ffee0000000000f003", at: Self.now,
                data: ["new_quiz": "off"]))
        #expect(try await client.flags.value(of: "new_quiz") == "off")
        #expect(changes.all.last == [FlagChange(name: "new_quiz", oldValue: "on", newValue: "off")])

        // Past the first message's expiry its remaining flag drops out, and the change is reported.
        clock.set(instant("2026-03-10T15:00:01Z"))
        #expect(try await client.flags.all().map(\.name) == ["new_quiz"])
        #expect(changes.all.last == [FlagChange(name: "theme", oldValue: "b", newValue: nil)])
        // A message that expired before it arrived sets nothing.
        _ = try await client.receive(
            payload: Self.background(
                key: "65f0c0ffee0000000000f004", at: Self.now + 1,
                data: ["late": "yes"], expiresAt: Self.now + 60_000))
        #expect(try await client.flags.value(of: "late") == nil)
        #expect(try await client.store.messages().isEmpty)
    }

    @Test func aCatchUpEntryNotShownGoesToTheFlagsAndABannerKeepsItsFields() throws {
        let hidden = #"""
            {"msi_key": "65f0c0ffee0000000000f010", "topic_key": "a-b-c", "distribution": "Information",
             "title": "", "desc": "", "message": "", "timestamp": 1773151200000, "display": false,
             "data": {"quiz": "on"}, "expires_at": 1773154800000, "ttl": 600}
            """#
        let message = try JSONDecoder().decode(HubMessage.self, from: Data(hidden.utf8))
        // The earlier of the sender's expiry and the ttl from its send time.
        #expect(
            message.background
                == BackgroundMessage(
                    msiKey: "65f0c0ffee0000000000f010", timestamp: 1_773_151_200_000,
                    data: ["quiz": "on"], expiresAt: 1_773_151_800_000))
        let banner = #"""
            {"msi_key": "65f0c0ffee0000000000f011", "topic_key": "a-b-c", "distribution": "Alert", "title": "Down",
             "desc": "Back at 6", "message": "Upgrades", "timestamp": 1773151200000, "kind": "downtime",
             "dismissible": false, "image": "https://school.example/down.png", "lang": "en",
             "translations": {"hi": {"title": "बंद", "desc": "6 बजे", "message": ""}}}
            """#
        let decoded = try JSONDecoder().decode(HubMessage.self, from: Data(banner.utf8))
        #expect(decoded.background == nil)
        let stored = decoded.stored.localized(to: "hi-IN")
        #expect(stored.title == "बंद" && stored.desc == "6 बजे" && stored.language == "hi")
        #expect(stored.translations == ["en": MessageText(title: "Down", desc: "Back at 6", text: "Upgrades")])
        #expect(stored.kind == "downtime" && !stored.dismissible && stored.image?.host == "school.example")
        #expect(stored.texts(in: "en")?.title == "Down" && stored.texts(in: "hi")?.title == "बंद")
        #expect(decoded.stored.localized(to: "fr-FR") == decoded.stored)
    }

    @Test func aTranslatedPushIsStoredInTheDevicesLanguageWithItsOtherTexts() async throws {
        let payload = [
            "msi_key": "65f0c0ffee0000000000f020", "topic_key": "a-b-c", "dist": "Alert", "title": "Closed",
            "desc": "Snow", "message": "The school is closed.", "timestamp": String(Self.now), "lang": "en",
            "translations":
                #"{"hi":{"title":"बंद","desc":"बर्फ़","message":"विद्यालय बंद है।"},"ta":{"title":"மூடல்","desc":"பனி","message":""}}"#,
            "kind": "downtime", "dismissible": "false", "expires_at": String(Self.now + 60_000),
            "image": "https://school.example/snow.png", "room": "r-1",
        ]
        let hindi = try Self.client(locale: "hi-IN")
        let received = try #require(try await hindi.receive(payload: payload))
        guard case .alert(let title, let body, let message) = received else {
            Issue.record("an Alert must be shown, got \(received)")
            return
        }
        #expect(title == "बंद" && body == "बर्फ़" && message.text == "विद्यालय बंद है।" && message.language == "hi")
        #expect(message.translations["en"] == MessageText(title: "Closed", desc: "Snow", text: "The school is closed."))
        #expect(message.translations["ta"]?.title == "மூடல்" && message.translations["hi"] == nil)
        #expect(message.data == ["room": "r-1"], "the hub's keys are not the sender's data")
        #expect(
            message.kind == "downtime" && !message.dismissible
                && message.image?.absoluteString == "https://school.example/snow.png")
        #expect(message.expiresAt == Date(timeIntervalSince1970: Double(Self.now + 60_000) / 1000))
        // Stored as shown, the original kept.
        #expect(try await hindi.store.messages() == [message])

        let french = try Self.client(locale: "fr")
        let kept = try #require(try await french.receive(payload: payload)).message
        #expect(kept.title == "Closed" && kept.language == "en" && Set(kept.translations.keys) == ["hi", "ta"])
        #expect(try await french.store.messages() == [kept])
    }
}

import FakeFCM
import Foundation
import MSIKit
import MongoTestSupport
import Synchronization
import Testing

/// Banners and flags from a real hub through MSIKit and `msi-device`: a phone set up after a downtime notice shows
/// it in its language, before and after it registers; a message not shown sets the phone's flags and never enters
/// its message list, pushed or caught up.
@Suite("Banners and flags against a real hub", .tags(.faults))
struct BroadcastsAgainstHubTests {
    /// A downtime notice on Exams (Recommended, Alert: every phone has it) with a Hindi translation and a poster, kept until it expires.
    static func downtime(expiresAt: Int64) -> [String: Any] {
        [
            "title": "Portal down", "desc": "Back at 6 pm", "message": "Upgrades until 6 pm.", "distribution": "Alert",
            "topic_key": SchoolCube.exams.topicKey, "kind": "downtime", "dismissible": false,
            "image": "https://school.example/down.png", "expires_at": expiresAt,
            "translations": ["hi": ["title": "पोर्टल बंद", "desc": "शाम 6 बजे तक", "message": "शाम 6 बजे तक अपग्रेड।"]],
        ]
    }

    /// A message not shown on Events (Recommended: every phone has it) setting `data`.
    static func flags(_ data: [String: String]) -> [String: Any] {
        [
            "title": "", "desc": "", "message": "", "distribution": "Information",
            "topic_key": SchoolCube.events.topicKey,
            "display": false, "data": data,
        ]
    }

    /// POST /message as the admin; the `msi_key`.
    static func send(_ hub: LiveHub, _ fields: [String: Any]) async throws -> String {
        let (status, body) = try await hub.request("POST", "message", fields)
        try #require(status == 201, "POST /message answered \(status): \(String(decoding: body, as: UTF8.self))")
        return try #require((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["msi_key"] as? String)
    }

    @Test func aPhoneSetUpAfterADowntimeNoticeShowsItInItsLanguageAndAPushNotShownSetsItsFlags() async throws {
        try await LiveHub.with { hub in
            let expiry = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
            let banner = try await Self.send(hub, Self.downtime(expiresAt: expiry))
            _ = try await hub.send(SchoolCube.events, title: "Fair")

            let push = InboxPush(fake: hub.fake, token: "banner-1")
            let client = try MSIClient(
                configuration: .init(
                    hub: hub.url, directory: nil, platform: .android,
                    locale: "hi-IN"), push: push)
            // Before it registers: the cube's Forced and Recommended subjects, no credentials.
            let anonymous = try await client.activeBroadcasts()
            #expect(anonymous.map(\.msiKey) == [banner])
            let shown = try #require(anonymous.first)
            #expect(shown.title == "पोर्टल बंद" && shown.desc == "शाम 6 बजे तक" && shown.language == "hi")
            #expect(
                shown.kind == "downtime" && !shown.dismissible
                    && shown.image?.absoluteString == "https://school.example/down.png")
            #expect(shown.expiresAt == Date(timeIntervalSince1970: Double(expiry) / 1000))
            #expect(shown.message.translations["en"]?.title == "Portal down")

            // Registered: its own list, the same banner in Hindi; the catch-up stored it in Hindi too.
            let caughtUp = try await client.start()
            #expect(try await client.activeBroadcasts().map(\.title) == ["पोर्टल बंद"])
            #expect(caughtUp.first { $0.message.msiKey == banner }?.message.title == "पोर्टल बंद")

            // The hub puts a phone with a locale on its language's topic too.
            try await hub.waitUntilApplied("banner-1", SchoolCube.automatic.union(["lang-hi"]))
            let changes = Mutex<[FlagChange]>([])
            client.flags.onChange { list in changes.withLock { $0 += list } }
            let listener = Task { await client.run(onMessage: { _ in }) }
            defer { listener.cancel() }
            let hidden = try await Self.send(hub, Self.flags(["new_quiz": "on"]))
            try await eventually("the flag is set") { try await client.flags.value(of: "new_quiz") == "on" }
            #expect(try await client.flags.all().first?.msiKey == hidden)
            #expect(changes.withLock { $0 } == [FlagChange(name: "new_quiz", oldValue: nil, newValue: "on")])
            #expect(try await !client.store.messages().contains { $0.msiKey == hidden })
            // A catch-up brings it again: applied once, still not in the list.
            try await client.catchUp()
            #expect(try await !client.store.messages().contains { $0.msiKey == hidden })
            #expect(changes.withLock { $0.count } == 1)
        }
    }

    @Test func msiDevicePrintsTheFlagsAndTheBannersItCaughtUpWith() async throws {
        try await LiveHub.with { hub in
            let expiry = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
            let banner = try await Self.send(hub, Self.downtime(expiresAt: expiry))
            let hidden = try await Self.send(hub, Self.flags(["new_quiz": "on", "theme": "dark"]))
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("msi-device-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let stateOption = ["--state", state.path]
            let registered = try await MSIDeviceCommandTests.run(
                [
                    "register", "--hub", hub.url.absoluteString, "--fake-fcm", hub.fake.baseURL, "--locale", "hi-IN",
                ] + stateOption)
            #expect(registered.status == 0 && registered.output.contains("registered "), "\(registered.output)")

            let flags = try await MSIDeviceCommandTests.run(["flags"] + stateOption)
            let lines = flags.output.split(separator: "\n").map(String.init)
            #expect(lines == ["new_quiz=on from=\(hidden)", "theme=dark from=\(hidden)"], "\(flags.output)")

            let banners = try await MSIDeviceCommandTests.run(["banners"] + stateOption)
            #expect(banners.status == 0, "\(banners.output)")
            let line = try #require(banners.output.split(separator: "\n").first.map(String.init))
            #expect(
                line.hasPrefix(
                    "\(banner) DOWNTIME [hi] पोर्टल बंद: शाम 6 बजे तक image=https://school.example/down.png fixed until="),
                "\(banners.output)")

            let messages = try await MSIDeviceCommandTests.run(["messages"] + stateOption)
            #expect(messages.output.contains(banner) && !messages.output.contains(hidden), "\(messages.output)")
        }
    }
}

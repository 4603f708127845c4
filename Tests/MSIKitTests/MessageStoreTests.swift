import Foundation
import MSIKit
import Testing

@Suite("Message store")
struct MessageStoreTests {
    let store: MessageStore

    init() throws {
        store = try MessageStore(path: nil)
    }

    @Test func addIsIdempotentByMsiKey() async throws {
        let first = message(1, at: 1_000)
        #expect(try await store.add(first))
        var again = first
        again.title = "Changed"
        #expect(try await !store.add(again))
        #expect(try await store.messages() == [first])
    }

    @Test func messagesAreNewestFirst() async throws {
        for (number, timestamp) in [(1, 3_000), (2, 1_000), (3, 5_000), (4, 2_000)] {
            try await store.add(message(number, at: Int64(timestamp)))
        }
        #expect(try await store.messages().map(\.timestamp) == [5_000, 3_000, 2_000, 1_000])
    }

    @Test func channelFilterTakesTopicKeysThatStartWithTheChannelID() async throws {
        let campus = "5a0b1c2d3e4f5a6b7c8d9e01", faculty = "6b0b1c2d3e4f5a6b7c8d9e10"
        try await store.add(message(1, at: 1_000, channel: campus))
        try await store.add(message(2, at: 2_000, channel: faculty))
        try await store.add(message(3, at: 3_000, channel: campus))
        #expect(try await store.messages(channelID: campus).map(\.timestamp) == [3_000, 1_000])
        #expect(try await store.messages(channelID: faculty.uppercased()).map(\.timestamp) == [2_000])
        // Part of an id is not a channel.
        #expect(try await store.messages(channelID: String(campus.prefix(10))).isEmpty)
    }

    @Test func existsAndRemove() async throws {
        let stored = message(7, at: 1_000)
        try await store.add(stored)
        #expect(try await store.exists(msiKey: stored.msiKey))
        #expect(try await store.remove(msiKey: stored.msiKey))
        #expect(try await !store.exists(msiKey: stored.msiKey))
        #expect(try await !store.remove(msiKey: stored.msiKey))
    }

    @Test func newestTimestamp() async throws {
        #expect(try await store.newestTimestamp() == nil)
        try await store.add(message(1, at: 2_000))
        try await store.add(message(2, at: 9_000))
        try await store.add(message(3, at: 4_000))
        #expect(try await store.newestTimestamp() == 9_000)
    }

    @Test func messagesSurviveReopeningTheFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("msikit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let stored = message(1, at: 1_000, distribution: .alert)
        try await MessageStore(path: path).add(stored)
        let reopened = try MessageStore(path: path)
        #expect(try await reopened.messages() == [stored])
        #expect(try await !reopened.add(stored))
    }
}

@Suite("clearOldMessages: older than a week from the end of the current day")
struct ClearOldMessagesTests {
    /// 2026-03-10 15:00 in Paris (CET, UTC+1) and 07:00 in Los Angeles (PDT, UTC-7: daylight saving began there on
    /// 8 March, so the cut, on 4 March, is in PST, UTC-8).
    static let now = instant("2026-03-10T14:00:00Z")

    /// The end of today is midnight starting 11 March; the cut is midnight starting 4 March, local time.
    @Test(arguments: [
        ("Europe/Paris", "2026-03-03T23:00:00Z"),
        ("America/Los_Angeles", "2026-03-04T08:00:00Z"),
    ])
    func cutIsMidnightStartingTheSixthDayBeforeToday(zone: String, cut: String) async throws {
        let timeZone = try #require(TimeZone(identifier: zone))
        let store = try MessageStore(path: nil, clock: { Self.now }, timeZone: timeZone)
        #expect(store.oldMessagesCutoff == instant(cut))

        let cutMilliseconds = milliseconds(cut)
        try await store.add(message(1, at: cutMilliseconds - 1))  // the last millisecond of the seventh day back
        try await store.add(message(2, at: cutMilliseconds))  // the first of the sixth day back
        try await store.add(message(3, at: cutMilliseconds - 86_400_000 * 30))
        try await store.add(message(4, at: milliseconds("2026-03-10T13:59:00Z")))
        #expect(try await store.clearOldMessages() == 2)
        #expect(try await store.messages().map(\.msiKey) == [message(4, at: 0).msiKey, message(2, at: 0).msiKey])
    }

    /// Los Angeles gained an hour's offset within the week: a message 167.5 hours before the end of today is still
    /// on the seventh day back (3 March, 23:30 PST), so it goes; counting 168 hours would have kept it.
    @Test func daylightSavingChangeDoesNotMoveTheCutOffMidnight() async throws {
        let timeZone = try #require(TimeZone(identifier: "America/Los_Angeles"))
        let store = try MessageStore(path: nil, clock: { Self.now }, timeZone: timeZone)
        try await store.add(message(1, at: milliseconds("2026-03-04T07:30:00Z")))
        #expect(try await store.clearOldMessages() == 1)
    }

    /// The same instant is a different day in Paris and in Los Angeles, so one message is cleared in one only.
    @Test func theStoresTimeZoneDecidesWhatTodayIs() async throws {
        let lateInParis = instant("2026-03-10T23:30:00Z")  // 00:30 on 11 March in Paris, 16:30 on 10 March in LA
        let paris = try MessageStore(
            path: nil, clock: { lateInParis }, timeZone: try #require(TimeZone(identifier: "Europe/Paris")))
        let losAngeles = try MessageStore(
            path: nil, clock: { lateInParis }, timeZone: try #require(TimeZone(identifier: "America/Los_Angeles")))
        let fourthOfMarchNoon = message(1, at: milliseconds("2026-03-04T12:00:00Z"))
        try await paris.add(fourthOfMarchNoon)
        try await losAngeles.add(fourthOfMarchNoon)
        #expect(try await paris.clearOldMessages() == 1)  // 4 March is the seventh day before 11 March
        #expect(try await losAngeles.clearOldMessages() == 0)  // and the sixth before 10 March
    }

    /// One second either side of midnight in Paris moves the cut by a whole day.
    @Test func cutMovesAtMidnight() async throws {
        let timeZone = try #require(TimeZone(identifier: "Europe/Paris"))
        let beforeMidnight = try MessageStore(
            path: nil, clock: { instant("2026-03-10T22:59:59Z") }, timeZone: timeZone)
        let afterMidnight = try MessageStore(
            path: nil, clock: { instant("2026-03-10T23:00:01Z") }, timeZone: timeZone)
        let old = message(1, at: milliseconds("2026-03-04T11:00:00Z"))
        try await beforeMidnight.add(old)
        try await afterMidnight.add(old)
        #expect(try await beforeMidnight.clearOldMessages() == 0)
        #expect(try await afterMidnight.clearOldMessages() == 1)
        #expect(afterMidnight.oldMessagesCutoff == instant("2026-03-04T23:00:00Z"))
    }
}

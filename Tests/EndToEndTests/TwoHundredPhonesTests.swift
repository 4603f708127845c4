import FakeFCM
import Foundation
import MSIKit
import MongoTestSupport
import Testing

/// The whole system at a school's scale: 200 phones on MSIKit register with a real hub, choose their subjects,
/// and receive 20 messages sent through POST /message, by push through the fake FCM or, for the 20 that were off,
/// by catching up.
@Suite("End to end: 200 phones", .tags(.faults))
struct TwoHundredPhonesTests {
    static let phoneCount = 200
    static let offlineCount = 20
    static let messageCount = 20
    /// Registrations in flight at once, as phones arriving over a morning would overlap.
    static let concurrency = 16

    /// Phone `index`'s choices on top of what the hub gives: some leave a Recommended subject, some join a club.
    static func topics(of index: Int) -> Set<String> {
        var topics = SchoolCube.automatic
        if index % 5 == 1 { topics.remove(SchoolCube.events.topicKey) }
        if index % 10 == 4 { topics.remove(SchoolCube.exams.topicKey) }
        if index % 4 == 2 { topics.insert(SchoolCube.chess.topicKey) }
        if index % 7 == 3 { topics.insert(SchoolCube.choir.topicKey) }
        return topics
    }

    @Test func everyPhoneEndsWithExactlyTheMessagesOfItsSubscriptionsOnce() async throws {
        try await LiveHub.with { hub in
            let clock = ContinuousClock()
            let phones = try (0..<Self.phoneCount).map { index in
                try SimulatedPhone(hub: hub.url, fake: hub.fake, token: String(format: "phone-%03d", index))
            }
            let offline = Set(Self.phoneCount - Self.offlineCount..<Self.phoneCount)

            // Register (start) and choose, 16 at a time.
            let registerStart = clock.now
            try await Self.forEach(Array(phones.enumerated())) { index, phone in
                try await phone.start()
                let wanted = Self.topics(of: index)
                for topic in SchoolCube.automatic.subtracting(wanted) { try await phone.client.unsubscribe(topic) }
                for topic in wanted.subtracting(SchoolCube.automatic) { try await phone.client.subscribe(topic) }
            }
            let registered = clock.now - registerStart
            for (index, phone) in phones.enumerated() {
                #expect(Set(try await phone.client.subscriptions().map(\.topicKey)) == Self.topics(of: index))
            }
            try await eventually("FCM has every phone's subscriptions", within: .seconds(60)) {
                phones.enumerated().allSatisfy { hub.fake.subscriptions(of: $1.push.registration) == Self.topics(of: $0) }
            }
            let applied = clock.now - registerStart
            for (index, phone) in phones.enumerated() where !offline.contains(index) { phone.listen() }
            defer { phones.forEach { $0.stop() } }

            // 20 messages, round-robin over the five subjects.
            let sendStart = clock.now
            var sent: [(key: String, topic: String)] = []
            for number in 0..<Self.messageCount {
                let subject = SchoolCube.subjects[number % SchoolCube.subjects.count]
                sent.append((try await hub.send(subject, title: "Message \(number)"), subject.topicKey))
            }
            let sendTime = clock.now - sendStart
            func expected(_ index: Int) -> Set<String> {
                Set(sent.filter { Self.topics(of: index).contains($0.topic) }.map(\.key))
            }
            try await eventually("every online phone has its messages", within: .seconds(120)) {
                phones.enumerated().allSatisfy { index, phone in
                    offline.contains(index) || Set(phone.shownKeys) == expected(index)
                }
            }
            let pushed = clock.now - sendStart

            // The phones that were off come back: FCM's queue for them is gone; they catch up on start.
            try await hub.waitUntilRelayed()
            for index in offline { _ = phones[index].push.loseQueuedPushes() }
            let catchUpStart = clock.now
            try await Self.forEach(offline.map { (index: $0, phone: phones[$0]) }) { _, phone in try await phone.start() }
            let caughtUp = clock.now - catchUpStart
            let delivered = clock.now - sendStart

            try await Task.sleep(for: .milliseconds(500))
            for (index, phone) in phones.enumerated() {
                let shown = phone.shownKeys
                #expect(shown.count == Set(shown).count, "phone \(index) was shown a message twice")
                #expect(Set(shown) == expected(index), "phone \(index)")
                #expect(try await phone.storedKeys() == expected(index), "phone \(index)'s store")
                #expect(phone.listenerErrors.isEmpty, "phone \(index): \(phone.listenerErrors)")
            }

            // Phone 0 leaves Events: nothing more from it reaches phone 0, while phone 2 still gets it.
            let leaver = phones[0], stayer = phones[2]
            try await leaver.client.unsubscribe(SchoolCube.events.topicKey)
            try await hub.waitUntilApplied(leaver.push.registration, Self.topics(of: 0).subtracting([SchoolCube.events.topicKey]))
            let after = try await hub.send(SchoolCube.events, title: "After leaving")
            let control = try await hub.send(SchoolCube.closures, title: "Control")
            try await eventually("the later messages arrive", within: .seconds(30)) {
                stayer.shownKeys.contains(after) && leaver.shownKeys.contains(control)
            }
            try await leaver.catchUp()
            #expect(!leaver.shownKeys.contains(after))
            #expect(try await !leaver.storedKeys().contains(after))

            func seconds(_ duration: Duration) -> String {
                String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
            }
            let figures = """
                end-to-end: \(Self.phoneCount) phones registered and chose their subjects in \(seconds(registered)) \
                (\(Self.concurrency) at a time); every subscription applied at FCM after \(seconds(applied)); \
                \(Self.messageCount) messages sent in \(seconds(sendTime)); every online phone had its messages \
                \(seconds(pushed)) after the first send; the \(Self.offlineCount) phones that were off caught up in \
                \(seconds(caughtUp)); all delivered \(seconds(delivered)) after the first send
                """
            print(figures)
        }
    }

    /// Runs `body` for every element, `concurrency` at a time.
    static func forEach<Element: Sendable>(
        _ elements: [Element], _ body: @escaping @Sendable (Element) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var pending = elements[...]
            for _ in 0..<min(concurrency, pending.count) {
                let element = pending.removeFirst()
                group.addTask { try await body(element) }
            }
            while try await group.next() != nil {
                if let element = pending.popFirst() { group.addTask { try await body(element) } }
            }
        }
    }
}

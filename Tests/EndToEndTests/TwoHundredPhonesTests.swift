import FakeFCM
import Foundation
import MSIKit
import MongoTestSupport
import Testing

/// The whole system at a school's scale: 200 phones on MSIKit register with a real hub, choose their subjects,
/// and receive 20 messages sent through POST /message, by push through the fake FCM or, for the 20 that were off,
/// by catching up. Then 100 of them sign in as 50 persons (two phones each) and receive exactly their persons'
/// messages and their groups', one FCM request per device.
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

    /// The persons of the phones that sign in: phones 2k and 2k+1 are person k's, for the first 100 phones.
    static let boundPhones = 100
    static func person(of index: Int) -> String? { index < boundPhones ? "person-\(index / 2)" : nil }
    /// Two groups that overlap: persons 0 to 24, and 20 to 49.
    static let groups = [
        "class-a": Set((0..<25).map { "person-\($0)" }), "class-b": Set((20..<50).map { "person-\($0)" }),
    ]

    @Test func everyPhoneEndsWithExactlyTheMessagesOfItsSubscriptionsOnce() async throws {
        try await LiveHub.with(persons: PersonBindingAgainstHubTests.persons(), countsUnread: true) { hub in
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
                phones.enumerated().allSatisfy {
                    hub.fake.subscriptions(of: $1.push.registration) == Self.topics(of: $0)
                }
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
            try await Self.forEach(offline.map { (index: $0, phone: phones[$0]) }) { _, phone in try await phone.start()
            }
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
            try await hub.waitUntilApplied(
                leaver.push.registration, Self.topics(of: 0).subtracting([SchoolCube.events.topicKey]))
            let after = try await hub.send(SchoolCube.events, title: "After leaving")
            let control = try await hub.send(SchoolCube.closures, title: "Control")
            try await eventually("the later messages arrive", within: .seconds(30)) {
                stayer.shownKeys.contains(after) && leaver.shownKeys.contains(control)
            }
            try await leaver.catchUp()
            #expect(!leaver.shownKeys.contains(after))
            #expect(try await !leaver.storedKeys().contains(after))

            // Persons and groups: 100 phones sign in as 50 persons; messages to persons, to a group, to a group and a
            // person reach exactly the phones of the persons they name, once each, and no other phone.
            let bindStart = clock.now
            try await Self.forEach(Array(phones.enumerated().prefix(Self.boundPhones))) { index, phone in
                let person = try #require(Self.person(of: index))
                #expect(
                    try await phone.client.bind(assertion: try await PersonBindingAgainstHubTests.assertion(person))
                        == person)
            }
            let bound = clock.now - bindStart
            for (id, members) in Self.groups { try await hub.putGroup(id, members: members.sorted()) }
            let personalStart = clock.now
            var addressed: [(key: String, persons: Set<String>)] = []
            for person in ["person-0", "person-7", "person-13", "person-49"] {
                addressed.append(
                    (try await hub.send(toPersons: [person], title: "For \(person)", data: ["room": person]), [person]))
            }
            addressed.append((try await hub.send(groups: ["class-a"], title: "Class A"), Self.groups["class-a"]!))
            addressed.append(
                (
                    try await hub.send(toPersons: ["person-3"], groups: ["class-b"], title: "Class B and person 3"),
                    Self.groups["class-b"]!.union(["person-3"])
                ))
            let addressedKeys = Set(addressed.map(\.key))
            func expectedAddressed(_ index: Int) -> Set<String> {
                guard let person = Self.person(of: index) else { return [] }
                return Set(addressed.filter { $0.persons.contains(person) }.map(\.key))
            }
            try await eventually("every bound phone has its persons' messages", within: .seconds(60)) {
                phones.enumerated().allSatisfy { index, phone in
                    offline.contains(index)
                        || Set(phone.shownKeys).intersection(addressedKeys) == expectedAddressed(index)
                }
            }
            let personal = clock.now - personalStart
            try await hub.waitUntilRelayed()
            try await Task.sleep(for: .milliseconds(500))
            for (index, phone) in phones.enumerated() {
                let shown = phone.shownKeys.filter(addressedKeys.contains)
                #expect(shown.count == Set(shown).count, "phone \(index) was shown a personal message twice")
                #expect(
                    Set(shown) == expectedAddressed(index), "phone \(index) (\(Self.person(of: index) ?? "nobody"))")
            }
            // One FCM request per device: each message's sends name exactly its persons' phones' tokens.
            for message in addressed {
                let tokens = hub.fake.received.filter { $0.data["msi_key"] == message.key }.compactMap {
                    $0.message["token"] as? String
                }
                let phonesOfPersons = phones.enumerated().filter { index, _ in
                    Self.person(of: index).map(message.persons.contains) ?? false
                }.map { $1.push.registration }
                #expect(tokens.sorted() == phonesOfPersons.sorted(), "the sends of \(message.key)")
            }
            // The personal message's data reached the app.
            let personZero = phones[0].shownMessages.first { $0.message.msiKey == addressed[0].key }
            #expect(personZero?.message.data["room"] == "person-0")

            // A room: persons 0 to 9 may post; person 0 posts from their first phone. Every other member's phones
            // are shown it once, in the room's thread; neither of the author's phones ever gets it.
            let roomMembers = (0..<10).map { "person-\($0)" }
            let (roomStatus, roomBody) = try await hub.request(
                "PUT", "group/chess-room", ["name": "Chess room", "members": roomMembers, "posting": "members"])
            #expect(roomStatus == 201, "\(String(decoding: roomBody, as: UTF8.self))")
            let roomStart = clock.now
            let post = try await phones[0].client.post(toGroup: "chess-room", message: "Board 3 is free")
            let roomPhones = Set((2..<20).filter { !offline.contains($0) })
            try await eventually("every other member's phone shows the post", within: .seconds(60)) {
                roomPhones.allSatisfy { phones[$0].shownKeys.contains(post) }
            }
            let roomTime = clock.now - roomStart
            try await hub.waitUntilRelayed()
            try await Task.sleep(for: .milliseconds(500))
            for (index, phone) in phones.enumerated() {
                let shown = phone.shownKeys.filter { $0 == post }.count
                #expect(
                    shown == (roomPhones.contains(index) ? 1 : 0), "phone \(index) was shown the post \(shown) times")
            }
            let postSends = hub.fake.received.filter { $0.data["msi_key"] == post }
            #expect(postSends.allSatisfy { $0.data["group"] == "chess-room" })
            #expect(
                Set(postSends.compactMap { $0.message["token"] as? String })
                    == Set((2..<20).map { phones[$0].push.registration }))

            // A read on one phone of a person (person 1: phones 2 and 3) clears the other and the count falls.
            let unreadBefore = try await phones[3].client.unreadCounts()
            #expect(unreadBefore.groups["chess-room"] == 1 && unreadBefore.total >= 1)
            try await phones[2].client.markRead(msiKey: post)
            try await eventually("the person's other phone is told of the read", within: .seconds(30)) {
                phones[3].shownMessages.contains {
                    if case .read(let message, let unread) = $0 {
                        return message.msiKey == post && unread == unreadBefore.total - 1
                    }
                    return false
                }
            }
            let unreadAfter = try await phones[3].client.unreadCounts()
            #expect(unreadAfter.total == unreadBefore.total - 1 && unreadAfter.groups["chess-room"] == nil)

            func seconds(_ duration: Duration) -> String {
                String(
                    format: "%.1f s",
                    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
            }
            let figures = """
                end-to-end: \(Self.phoneCount) phones registered and chose their subjects in \(seconds(registered)) \
                (\(Self.concurrency) at a time); every subscription applied at FCM after \(seconds(applied)); \
                \(Self.messageCount) messages sent in \(seconds(sendTime)); every online phone had its messages \
                \(seconds(pushed)) after the first send; the \(Self.offlineCount) phones that were off caught up in \
                \(seconds(caughtUp)); all delivered \(seconds(delivered)) after the first send; \(Self.boundPhones) phones \
                signed in as \(Self.boundPhones / 2) persons in \(seconds(bound)); \(addressed.count) messages to persons and \
                groups on their phones \(seconds(personal)) after the first send; a room's post on every other member's \
                phone \(seconds(roomTime)) after it was posted
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

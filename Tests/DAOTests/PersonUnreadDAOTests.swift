@testable import DAO
import Mongo
import MongoTestSupport
import Testing

/// Unread counts kept as each group's message numbers and what each person read of them: the arithmetic of a
/// thread, numbers taken once whatever runs at once, reads in any order, and a person who leaves a group.
@Suite("Unread counts in the database")
struct PersonUnreadDAOTests {
    @Test func aThreadCountsWhatIsAfterItsMarkLessWhatWasReadOutOfOrder() {
        let thread = UnreadThread(mark: 3, read: [5, 7])
        #expect(thread.unread(upTo: 3) == 0)
        #expect(thread.unread(upTo: 7) == 2)  // 4 and 6
        #expect(thread.unread(upTo: 8) == 3)
        #expect(thread.compacted() == nil)  // 4 is unread: the mark stays
        #expect(UnreadThread(mark: 3, read: [5, 4, 7]).compacted() == UnreadThread(mark: 5, read: [7]))
        #expect(UnreadThread(mark: 9, read: []).unread(upTo: 4) == 0)
        let person = PersonUnread(direct: 2, threads: ["chess": thread, "club": UnreadThread(mark: 10)])
        #expect(person.counts(at: ["chess": 8, "club": 10]) == UnreadCounts(total: 5, groups: ["chess": 3]))
    }

    @Test func aGroupKeyKeepsDotsDollarsAndPercentsApartFromFieldPaths() {
        for group in ["a.b", "$set", "50%", "%2E", "plain", "x$y"] {
            let key = PersonUnreadDAO.groupKey(group)
            #expect(!key.contains(".") && !key.hasPrefix("$"))
            #expect(PersonUnreadDAO.group(ofKey: key) == group)
        }
    }

    @Test func eachMessageTakesItsOwnNumberOnceEvenWhenManyAreNumberedAtOnce() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let unread = PersonUnreadDAO(database: database)
            let keys = (0..<12).map { _ in ObjectID() }
            let numbers = try await withThrowingTaskGroup(of: (ObjectID, Int64?).self) { tasks in
                for key in keys {
                    tasks.addTask { (key, try await unread.numbers(ofMessage: key, in: ["chess"])["chess"]) }
                }
                return try await tasks.reduce(into: [ObjectID: Int64]()) { $0[$1.0] = $1.1 }
            }
            #expect(numbers.values.sorted() == Array(1...12))
            // Asked again (a fan-out resumed), a message keeps its number; a second group numbers it apart.
            let again = try await unread.numbers(ofMessage: keys[0], in: ["chess", "club"])
            #expect(again["chess"] == numbers[keys[0]])
            #expect(again["club"] == 1)
            #expect(try await unread.numbers(ofMessage: keys[0]) == again)
            #expect(try await unread.numbers(of: ["chess", "club", "nowhere"]) == ["chess": 12, "club": 1])
        }
    }

    @Test func readsInAnyOrderLowerTheCountOnceAndALeaverCountsAfreshWhenBack() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let groups = GroupDAO(database: database)
            _ = try await groups.replace(id: "chess", name: "Chess", access: [], persons: ["ann", "ben"])
            let unread = PersonUnreadDAO(database: database)
            var known: [String: Int64] = [:]
            var keys: [ObjectID] = []
            // Three messages to the room; then one named to Ann.
            for _ in 0..<3 {
                let key = ObjectID()
                let numbers = try await unread.numbers(ofMessage: key, in: ["chess"])
                let counts = try await unread.count(
                    key, numbers: numbers, for: ["ann": "chess", "ben": "chess"], known: &known)
                #expect(counts["ann"] == counts["ben"])
                keys.append(key)
            }
            #expect(try await unread.counts(of: "ann") == UnreadCounts(total: 3, groups: ["chess": 3]))
            let named = ObjectID()
            let counts = try await unread.count(named, numbers: [:], for: ["ann": nil], known: &known)
            #expect(counts["ann"] == UnreadCounts(total: 4, groups: ["chess": 3]))

            // Ann reads the newest first, then the oldest, then the middle one: each lowers the count once.
            #expect(try await unread.markRead(keys[2], for: "ann", named: false)?.total == 3)
            #expect(try await unread.markRead(keys[2], for: "ann", named: false) == nil)
            #expect(try await unread.markRead(keys[0], for: "ann", named: false)?.total == 2)
            #expect(try await unread.markRead(keys[1], for: "ann", named: false)?.total == 1)
            #expect(try await unread.markRead(named, for: "ann", named: true) == UnreadCounts(total: 0))
            // Read in full, her thread is one mark again.
            let stored = try await unread.states(of: ["ann"])["ann"]
            #expect(stored?.threads["chess"] == UnreadThread(mark: 3, read: []))
            #expect(try await unread.counts(of: "ben").total == 3)

            // Ben leaves (a roster without him) while a message goes; back, he counts from his next message.
            _ = try await groups.replace(id: "chess", name: "Chess", access: [], persons: ["ann"])
            let whileAway = ObjectID()
            _ = try await unread.count(
                whileAway, numbers: try await unread.numbers(ofMessage: whileAway, in: ["chess"]),
                for: ["ann": "chess"], known: &known)
            #expect(try await unread.counts(of: "ben").total == 0)
            _ = try await groups.add("ben", to: "chess")
            let back = ObjectID()
            let afterReturn = try await unread.count(
                back, numbers: try await unread.numbers(ofMessage: back, in: ["chess"]),
                for: ["ann": "chess", "ben": "chess"], known: &known)
            #expect(afterReturn["ben"] == UnreadCounts(total: 1, groups: ["chess": 1]))
            #expect(afterReturn["ann"] == UnreadCounts(total: 2, groups: ["chess": 2]))
            // Leaving one by one forgets too; a deleted group leaves no thread behind.
            #expect(try await groups.remove("ben", from: "chess"))
            #expect(try await unread.counts(of: "ben").total == 0)
            #expect(try await groups.delete(id: "chess"))
            #expect(try await unread.counts(of: "ann").total == 0)
        }
    }
}

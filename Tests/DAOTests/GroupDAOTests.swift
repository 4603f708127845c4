@testable import DAO
import Mongo
import MongoTestSupport
import Testing

@Suite("Groups and their members in the database")
struct GroupDAOTests {
    /// The stored members of `group`, sorted.
    static func stored(_ group: String, in database: MongoDatabase) async throws -> [String] {
        try await database.collection(CollectionName.groupMembers)
            .find(["group": .string(group)], options: FindOptions(sort: ["person": 1]))
            .compactMap { $0["person"]?.stringValue }
    }

    @Test func aReplacedRosterIsExactlyTheGivenMembersWithTheirCount() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let groups = GroupDAO(database: database)
            let first = try await groups.replace(
                id: "class-7b", name: "7B", access: ["ann"], persons: ["p1", "p2", "p3"])
            #expect(first.created && first.group.memberCount == 3)
            let second = try await groups.replace(
                id: "class-7b", name: "Class 7B", access: [], persons: ["p2", "p3", "p4"])
            #expect(!second.created)
            #expect(second.group.memberCount == 3 && second.group.name == "Class 7B" && second.group.access.isEmpty)
            #expect(try await Self.stored("class-7b", in: database) == ["p2", "p3", "p4"])
            // Another group's members are not touched by a replace.
            _ = try await groups.replace(id: "club", name: "Club", access: [], persons: ["p1"])
            _ = try await groups.replace(id: "class-7b", name: "Class 7B", access: [], persons: ["p2"])
            #expect(try await Self.stored("club", in: database) == ["p1"])
            #expect(try await groups.members(of: "class-7b", after: nil, limit: 10) == ["p2"])
        }
    }

    @Test func theUniqueIndexRefusesASecondDocumentForAMember() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let groups = GroupDAO(database: database)
            _ = try await groups.replace(id: "g", name: "G", access: [], persons: ["p1"])
            await #expect(throws: (any Error).self) {
                try await database.collection(CollectionName.groupMembers).insertOne(["group": "g", "person": "p1"])
            }
            #expect(try await groups.add("p1", to: "g")?.added == false)
            #expect(try await groups.add("p2", to: "g")?.added == true)
            #expect(try await groups.add("p2", to: "nowhere") == nil)
            #expect(try await groups.group(id: "g")?.memberCount == 2)
            #expect(try await groups.remove("p1", from: "g"))
            #expect(try await groups.remove("p1", from: "g") == false)
            #expect(try await groups.group(id: "g")?.memberCount == 1)
            #expect(try await groups.delete(id: "g"))
            #expect(try await Self.stored("g", in: database).isEmpty)
            #expect(try await groups.delete(id: "g") == false)
        }
    }

    @Test func aGroupsMemberRangesHoldEachMemberOnceAfterAddsAndRemoves() async throws {
        try await TestDatabase.with { database in
            try await DatabaseIndexes.ensure(in: database)
            let groups = GroupDAO(database: database)
            // 1,300 persons: three ranges (the first 128, the next 1,024, the rest), given in no order.
            var persons = (0..<1_300).map { "s\($0 * 7919 % 1_300)" }
            _ = try await groups.replace(id: "year-9", name: "Year 9", access: [], persons: persons)
            #expect(try await groups.memberRanges(of: "year-9").count == 3)
            // Members added and removed since the sync, before the first id, after the last, between and beyond
            // ASCII, fall into the ranges as they are.
            for person in ["a-first", "zz-last", "s5x", "é-accent", "s1000x"] {
                #expect(try await groups.add(person, to: "year-9")?.added == true)
                persons.append(person)
            }
            for person in ["s0", "s128", "s999"] {
                #expect(try await groups.remove(person, from: "year-9"))
                persons.removeAll { $0 == person }
            }
            var read: [String] = []
            for range in try await groups.memberRanges(of: "year-9") {
                read += try await groups.members(of: "year-9", in: range)
            }
            #expect(read.count == persons.count)
            #expect(Set(read) == Set(persons))
            // A group built by adds alone, or none at all: one open range.
            _ = try await groups.replace(id: "small", name: "Small", access: [], persons: ["p1"])
            #expect(try await groups.memberRanges(of: "small") == [MemberRange(lower: nil, upper: nil)])
            #expect(try await groups.memberRanges(of: "nowhere") == [MemberRange(lower: nil, upper: nil)])
        }
    }

    @Test func rangeMarksAreTheIdsAfterTheFirstRangeAndEveryFullRangeInTheDatabasesOrder() {
        // Given in reverse: the marks are of the ids in order, the database's (UTF-8 bytes: "Z" before "a").
        let persons = (0..<2_200).map { "p" + String(String(100_000 + $0).dropFirst()) }.reversed()
        #expect(GroupDAO.rangeMarks(of: Array(persons)) == ["p00128", "p01152", "p02176"])
        let mixed = ["a"] + (0..<128).map { "Z\($0)" }
        #expect(GroupDAO.rangeMarks(of: mixed) == ["a"])
        #expect(GroupDAO.rangeMarks(of: ["b", "a"]).isEmpty)
    }
}

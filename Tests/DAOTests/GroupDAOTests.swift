import DAO
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
            let first = try await groups.replace(id: "class-7b", name: "7B", access: ["ann"], persons: ["p1", "p2", "p3"])
            #expect(first.created && first.group.memberCount == 3)
            let second = try await groups.replace(id: "class-7b", name: "Class 7B", access: [], persons: ["p2", "p3", "p4"])
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
}

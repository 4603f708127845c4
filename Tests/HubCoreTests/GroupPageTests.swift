import DAO
@testable import HubCore
import MongoTestSupport
import Testing

/// The pages of groups and of a group's members, in their one home (`GroupService`), whichever adapter asks: a limit
/// outside 1 to `maximumPage` or a cursor that is not an id is refused before anything is read.
@Suite("Groups: pages of groups and of members")
struct GroupPageTests {
    @Test func aLimitOutsideItsRangeIsRefusedOnBothListings() async throws {
        try await TestDatabase.with { database in
            let groups = GroupService(database: database)
            _ = try await groups.replace(id: "chess", name: "Chess club", members: ["p1", "p2"], access: [])
            for limit in [0, -1, GroupService.maximumPage + 1] {
                let onGroups = await #expect(throws: GroupRefusal.self) {
                    _ = try await groups.page(after: nil, limit: limit)
                }
                #expect(onGroups?.code == .invalidField)
                let onMembers = await #expect(throws: GroupRefusal.self) {
                    _ = try await groups.members(of: "chess", after: nil, limit: limit)
                }
                #expect(onMembers?.code == .invalidField)
            }
            // The bounds themselves are pages.
            #expect(try await groups.page(after: nil, limit: GroupService.maximumPage).groups.map(\.id) == ["chess"])
            #expect(try await groups.members(of: "chess", after: nil, limit: 1) == (["p1"], "p1"))
        }
    }

    @Test func pagesOfGroupsFollowTheirIdsAndEndWithoutANext() async throws {
        try await TestDatabase.with { database in
            let groups = GroupService(database: database)
            for id in ["a", "b", "c"] { _ = try await groups.replace(id: id, name: id, members: ["p"], access: []) }
            let first = try await groups.page(after: nil, limit: 2)
            #expect(first.groups.map(\.id) == ["a", "b"] && first.next == "b")
            let second = try await groups.page(after: first.next, limit: 2)
            #expect(second.groups.map(\.id) == ["c"] && second.next == nil)
            let refused = await #expect(throws: GroupRefusal.self) {
                _ = try await groups.page(after: "$bad", limit: 2)
            }
            #expect(refused?.code == .invalidID)
        }
    }
}

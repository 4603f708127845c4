import DAO
import Foundation
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Groups: rosters, members and their limits")
struct GroupRoutesTests {
    /// A `PUT /group/:groupID` body.
    static func roster(_ name: String, _ members: [String], access: [String]? = nil) throws -> String {
        var body: [String: Any] = ["name": name, "members": members]
        if let access { body["access"] = access }
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    /// Every group and member document, to check that a refused request changed nothing.
    static func snapshot(_ hub: HubHarness) async throws -> [BSONDocument] {
        let groups = try await hub.database.collection(CollectionName.groups).find(
            [:], options: FindOptions(sort: ["_id": 1]))
        let members = try await hub.database.collection(CollectionName.groupMembers)
            .find([:], options: FindOptions(sort: ["group": 1, "person": 1]))
        return groups + members
    }

    /// Every member of `group`, walking its pages of `limit`; fails on a page that repeats or disorders a member.
    static func walk(_ hub: HubHarness, _ group: String, limit: Int) async throws -> [String] {
        var members: [String] = []
        var cursor: String?
        for _ in 0..<100 {
            let uri = "/group/\(group)/members?limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try await hub.request(.get, uri, as: .admin)
            #expect(page.status == .ok)
            let body = try page.json()
            let persons = try #require(body["members"]?.arrayValue).compactMap(\.stringValue)
            #expect(persons == persons.sorted() && persons.first.map { $0 > (members.last ?? "") } ?? true)
            members += persons
            guard let next = body["next"]?.stringValue else { return members }
            cursor = next
        }
        Issue.record("the pages of \(group) did not end")
        return members
    }

    @Test func aRosterCreatesThenReplacesTheGroupWithItsCount() async throws {
        try await HubHarness.with { hub in
            let created = try await hub.request(
                .put, "/group/class-7b", as: .admin,
                json: try Self.roster("7B", ["p1", "p2", "p3", "p2"], access: ["ann"]))
            #expect(created.status == .created)
            let group = try created.json()
            #expect(group["id"] == "class-7b" && group["name"] == "7B" && group["member_count"]?.int64Value == 3)
            #expect(group["access"] == ["ann"])
            // p1 leaves, p4 joins.
            let replaced = try await hub.request(
                .put, "/group/class-7b", as: .admin,
                json: try Self.roster("Class 7B", ["p2", "p3", "p4"]))
            #expect(replaced.status == .ok)
            #expect(try replaced.json()["member_count"]?.int64Value == 3)
            #expect(try replaced.json()["access"] == [])
            #expect(try await Self.walk(hub, "class-7b", limit: 2) == ["p2", "p3", "p4"])
            let read = try await hub.request(.get, "/group/class-7b", as: .admin).json()
            #expect(read["name"] == "Class 7B" && read["member_count"]?.int64Value == 3)
            let list = try await hub.request(.get, "/group", as: .admin).json()
            #expect(list["groups"]?.arrayValue?.compactMap { $0.documentValue?["id"]?.stringValue } == ["class-7b"])
        }
    }

    @Test func theGroupsArePagedByIdAndABadPageIsRefused() async throws {
        try await HubHarness.with { hub in
            for id in ["year-9", "club", "class-7b", "choir", "staff"] {
                #expect(
                    try await hub.request(.put, "/group/\(id)", as: .admin, json: try Self.roster(id, ["p1"])).status
                        == .created)
            }
            var ids: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await hub.request(
                    .get, "/group?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                    as: .admin)
                #expect(page.status == .ok)
                let body = try page.json()
                let groups = try #require(body["groups"]?.arrayValue).compactMap { $0.documentValue }
                #expect(groups.count <= 2 && groups.allSatisfy { $0["member_count"]?.int64Value == 1 })
                ids += groups.compactMap { $0["id"]?.stringValue }
                cursor = body["next"]?.stringValue
                pages += 1
            } while cursor != nil && pages < 10
            #expect(ids == ["choir", "class-7b", "club", "staff", "year-9"] && pages == 3)
            // Without a limit, a page of up to 500.
            let all = try await hub.request(.get, "/group", as: .admin).json()
            #expect(all["groups"]?.arrayValue?.count == 5 && all["next"] == .null)
            for uri in ["/group?limit=0", "/group?limit=1001", "/group?limit=two", "/group?cursor=%25%25"] {
                let refused = try await hub.request(.get, uri, as: .admin)
                #expect(refused.status == .badRequest && refused.errorCode == "invalid_query", "\(uri)")
            }
            // A cursor that decodes to no group id ("$") is refused before any query.
            let notAnID = try await hub.request(.get, "/group?cursor=JA", as: .admin)
            #expect(notAnID.status == .unprocessableContent, "\(notAnID.errorCode ?? "-")")
        }
    }

    @Test func theSameRosterTwiceGivesTheSameAnswerAndDuplicatesNothing() async throws {
        try await HubHarness.with { hub in
            let body = try Self.roster("Club", ["a", "b", "c"], access: ["ann"])
            _ = try await hub.request(.put, "/group/club", as: .admin, json: body)
            let before = try await hub.database.collection(CollectionName.groupMembers).find(
                [:], options: FindOptions(sort: ["person": 1]))
            var first = try await hub.request(.get, "/group/club", as: .admin).json()
            let again = try await hub.request(.put, "/group/club", as: .admin, json: body)
            #expect(again.status == .ok)
            var second = try again.json()
            first["updated_at"] = Optional<BSONValue>.none
            second["updated_at"] = Optional<BSONValue>.none
            #expect(first == second)
            let after = try await hub.database.collection(CollectionName.groupMembers).find(
                [:], options: FindOptions(sort: ["person": 1]))
            #expect(after.count == 3 && after.map { $0["_id"] } == before.map { $0["_id"] })
        }
    }

    @Test func oneMemberIsAddedAndRemovedWithTheCount() async throws {
        try await HubHarness.with { hub in
            _ = try await hub.request(.put, "/group/chat-42", as: .admin, json: try Self.roster("Room 42", ["p1"]))
            let added = try await hub.request(.put, "/group/chat-42/members/ann%20smith%40school.org", as: .admin)
            #expect(try added.status == .created && added.json()["member_count"]?.int64Value == 2)
            let again = try await hub.request(.put, "/group/chat-42/members/ann%20smith%40school.org", as: .admin)
            #expect(try again.status == .ok && again.json()["member_count"]?.int64Value == 2)
            #expect(try await Self.walk(hub, "chat-42", limit: 10) == ["ann smith@school.org", "p1"])
            let removed = try await hub.request(.delete, "/group/chat-42/members/p1", as: .admin)
            #expect(removed.status == .noContent)
            let gone = try await hub.request(.delete, "/group/chat-42/members/p1", as: .admin)
            #expect(gone.status == .notFound && gone.errorCode == "member_not_found")
            #expect(try await hub.request(.get, "/group/chat-42", as: .admin).json()["member_count"]?.int64Value == 1)
        }
    }

    @Test func anUnknownGroupIs404OnEveryRoute() async throws {
        try await HubHarness.with { hub in
            let requests: [(HTTPRequest.Method, String)] = [
                (.get, "/group/nope"), (.delete, "/group/nope"), (.get, "/group/nope/members"),
                (.put, "/group/nope/members/p1"), (.delete, "/group/nope/members/p1"),
            ]
            for (method, path) in requests {
                let response = try await hub.request(method, path, as: .admin)
                #expect(response.status == .notFound && response.errorCode == "group_not_found", "\(method) \(path)")
            }
            #expect(try await Self.snapshot(hub).isEmpty)
        }
    }

    @Test func badIdsAndFieldsAre422NamingTheFieldAndChangeNothing() async throws {
        try await HubHarness.with { hub in
            _ = try await hub.request(
                .put, "/group/club", as: .admin, json: try Self.roster("Club", ["p1"], access: ["ann"]))
            let before = try await Self.snapshot(hub)
            let longID = String(repeating: "g", count: 129)
            for path in [
                "/group/a$b", "/group/.hidden", "/group/\(longID)", "/group/a%20b", "/group/club/members/a%01b",
                "/group/club/members/\(String(repeating: "p", count: 257))",
            ] {
                let response = try await hub.request(.put, path, as: .admin, json: try Self.roster("X", []))
                #expect(response.status == .unprocessableContent && response.errorCode == "invalid_id", "\(path)")
            }
            let bodies: [(String, String)] = [
                (try Self.roster("", ["p1"]), "name"),
                (try Self.roster(String(repeating: "n", count: 201), ["p1"]), "name"),
                (#"{"name": "Club"}"#, "members"),
                (#"{"name": "Club", "members": "p1"}"#, "members"),
                (#"{"name": "Club", "members": ["p1", 7]}"#, "members[1]"),
                (try Self.roster("Club", ["p1", ""]), "members[1]"),
                (try Self.roster("Club", ["p1", String(repeating: "p", count: 257)]), "members[1]"),
                (try Self.roster("Club", ["p1\u{7}"]), "members[0]"),
                (try Self.roster("Club", ["p2"], access: ["not a name"]), "access[0]"),
            ]
            for (body, field) in bodies {
                let response = try await hub.request(.put, "/group/club", as: .admin, json: body)
                #expect(response.status == .unprocessableContent, "\(field)")
                let message = try response.json()[path: "error.message"]?.stringValue ?? ""
                #expect(message.contains(field), "\(field): \(message)")
            }
            #expect(try await Self.snapshot(hub) == before)
        }
    }

    @Test func deletingAGroupRemovesItsMembers() async throws {
        try await HubHarness.with { hub in
            _ = try await hub.request(.put, "/group/club", as: .admin, json: try Self.roster("Club", ["p1", "p2"]))
            _ = try await hub.request(.put, "/group/other", as: .admin, json: try Self.roster("Other", ["p1"]))
            #expect(try await hub.request(.delete, "/group/club", as: .admin).status == .noContent)
            #expect(try await hub.request(.get, "/group/club", as: .admin).status == .notFound)
            let members = try await hub.database.collection(CollectionName.groupMembers).find([:])
            #expect(members.map { $0["group"] } == ["other"])
        }
    }

    @Test func everyGroupRouteIs401AnonymousAnd403ToACommunicator() async throws {
        try await HubHarness.with { hub in
            _ = try await hub.request(.put, "/group/club", as: .admin, json: try Self.roster("Club", ["p1"]))
            let before = try await Self.snapshot(hub)
            let requests: [(HTTPRequest.Method, String)] = [
                (.get, "/group"), (.get, "/group/club"), (.put, "/group/club"), (.delete, "/group/club"),
                (.get, "/group/club/members"), (.put, "/group/club/members/p2"), (.delete, "/group/club/members/p1"),
            ]
            for (method, path) in requests {
                let body = method == .put && path == "/group/club" ? try Self.roster("Taken", []) : nil
                let anonymous = try await hub.request(method, path, json: body)
                #expect(
                    anonymous.status == .unauthorized && anonymous.errorCode == "unauthenticated", "\(method) \(path)")
                let communicator = try await hub.request(method, path, as: .communicator, json: body)
                #expect(communicator.status == .forbidden && communicator.errorCode == "forbidden", "\(method) \(path)")
            }
            #expect(try await Self.snapshot(hub) == before)
        }
    }
}

/// A whole roster of 10,000 members in one call: ten thousand documents written at once load the test database enough
/// to slow every suite beside it, so this suite runs apart, after the others.
@Suite("Groups: a roster of 10,000 members", .tags(.faults))
struct GroupRosterScaleTests {
    @Test func tenThousandMembersInOneCallArePagedEachExactlyOnce() async throws {
        try await HubHarness.with { hub in
            let persons = (0..<10_000).map { String(format: "person-%05d@school.example.org", $0) }
            let response = try await hub.request(
                .put, "/group/year-2027", as: .admin,
                json: try GroupRoutesTests.roster("Year 2027", persons.shuffled()))
            #expect(response.status == .created)
            #expect(try response.json()["member_count"]?.int64Value == 10_000)
            let walked = try await GroupRoutesTests.walk(hub, "year-2027", limit: 1_000)
            #expect(walked.count == 10_000 && walked == persons)
            // One more than the limit is refused whole.
            let tooMany = try await hub.request(
                .put, "/group/year-2027", as: .admin,
                json: try GroupRoutesTests.roster("Year 2027", persons + ["one-more"]))
            #expect(tooMany.status == .unprocessableContent)
            #expect(try await hub.database.collection(CollectionName.groupMembers).countDocuments() == 10_000)
        }
    }
}

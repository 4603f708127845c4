import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// The portal's admin pages of groups: the list with member counts, a group's members a page at a time and its
/// access, and rosters imported from CSV files through `GroupService` (as `PUT /group/:groupID` does), with CSRF.
@Suite struct GroupsAdminTests {
    @Test func aRosterFileCreatesAGroupThatTheListAndTheAPIShow() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let list = try await root.get("/portal/admin/groups")
            #expect(list.status == .ok && list.text.contains("No groups yet."))
            #expect(list.text.contains(#"href="/portal/admin/groups">Groups</a>"#))  // in the admin navigation
            let csrf = try PortalBrowser.csrf(in: list)
            // A header, blank lines, CRLF line ends, a quoted id and a repeated one.
            let file = "person\r\nalice@school.example\r\n\r\nbob\r\n\"carol, jr\"\r\nbob\r\n"
            let created = try await root.postMultipart(
                "/portal/admin/groups",
                [
                    "_csrf": csrf, "id": "class-7b", "name": "Class 7B", "access": "ann, bulletin-bot",
                ], file: ("roster", "7b.csv", file))
            #expect(created.status == .seeOther)
            #expect(created.headers[.location] == "/portal/admin/groups/class-7b?done=imported")

            let group = try await GroupService(database: hub.database).group(id: "class-7b")
            #expect(group.name == "Class 7B" && group.memberCount == 3 && group.access == ["ann", "bulletin-bot"])
            let api = try await hub.request(.get, "/group/class-7b/members", as: .admin).json()
            #expect(
                api["members"]?.arrayValue?.compactMap(\.stringValue) == ["alice@school.example", "bob", "carol, jr"])

            let listed = try await root.get("/portal/admin/groups")
            #expect(listed.text.contains("Class 7B") && listed.text.contains(#"data-members="3">3 members"#))
            let page = try await root.get("/portal/admin/groups/class-7b?done=imported")
            #expect(page.status == .ok && page.text.contains("The roster was imported."))
            #expect(
                page.text.contains("<code>carol, jr</code>") && page.text.contains(#"<span class="badge">ann</span>"#))
            #expect(page.text.contains(#"id="member-count">3<"#))
        }
    }

    @Test func importingOnAGroupsPageReplacesTheMembersAndKeepsNameAndAccess() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            let groups = GroupService(database: hub.database)
            _ = try await groups.replace(id: "chess", name: "Chess club", members: ["p1", "p2", "p3"], access: ["ann"])
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let csrf = try PortalBrowser.csrf(in: try await root.get("/portal/admin/groups/chess"))

            let replaced = try await root.postMultipart(
                "/portal/admin/groups/chess/import", ["_csrf": csrf],
                file: ("roster", "chess.csv", "p3\np4\n"))
            #expect(replaced.headers[.location] == "/portal/admin/groups/chess?done=imported")
            let group = try await groups.group(id: "chess")
            #expect(group.name == "Chess club" && group.access == ["ann"] && group.memberCount == 2)
            #expect(try await groups.members(of: "chess", after: nil, limit: 10).persons == ["p3", "p4"])

            // A bad line: nothing changes, and the form says which line, beside the file field.
            let bad = "p5\n\n" + String(repeating: "x", count: 300) + "\np6\n"
            let refused = try await root.postMultipart(
                "/portal/admin/groups/chess/import", ["_csrf": csrf],
                file: ("roster", "chess.csv", bad))
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text.contains(#"id="roster-error">Nothing was imported. Line 3: a person id is 1 to 256"#))
            #expect(try await groups.members(of: "chess", after: nil, limit: 10).persons == ["p3", "p4"])

            // Without the session's CSRF token the form is refused, and nothing changes either.
            let forged = try await root.postMultipart(
                "/portal/admin/groups/chess/import", ["_csrf": "forged"],
                file: ("roster", "chess.csv", "p9\n"))
            #expect(forged.status == .forbidden)
            #expect(try await groups.group(id: "chess").memberCount == 2)
            #expect(try await root.get("/portal/admin/groups/no-such-group").status == .notFound)
        }
    }

    @Test func theNewGroupFormShowsItsProblemsBesideItsFields() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let csrf = try PortalBrowser.csrf(in: try await root.get("/portal/admin/groups"))
            let refused = try await root.postMultipart(
                "/portal/admin/groups",
                [
                    "_csrf": csrf, "id": ".hidden", "name": "", "access": "good, bad name!",
                ], file: ("roster", "r.csv", "p1\n"))
            #expect(refused.status == .unprocessableContent)
            #expect(refused.text.contains(#"id="id-error">A group id is 1 to 128"#))
            #expect(refused.text.contains(#"id="name-error">"#) && refused.text.contains(#"id="access-error">“name!”"#))
            #expect(refused.text.contains(#"value=".hidden""#))  // the values come back
            #expect(try await GroupService(database: hub.database).all().isEmpty)
        }
    }

    @Test func membersComeAPageAtATime() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            let members = (0..<130).map { "person-\(String(format: "%03d", $0))" }
            _ = try await GroupService(database: hub.database).replace(
                id: "year-9", name: "Year 9", members: members,
                access: [])
            var root = PortalBrowser(hub: hub)
            _ = try await root.login("root", PortalTests.adminPassword)
            let first = try await root.get("/portal/admin/groups/year-9")
            #expect(first.text.contains("<code>person-099</code>") && !first.text.contains("<code>person-100</code>"))
            #expect(first.text.contains("admins only"))
            let next = try #require(Self.attribute("href", ofID: "next-page", in: first.text))
            #expect(next == "/portal/admin/groups/year-9?after=person-099")
            let second = try await root.get(next)
            #expect(second.text.contains("<code>person-100</code>") && second.text.contains("<code>person-129</code>"))
            #expect(!second.text.contains("<code>person-099</code>") && !second.text.contains("id=\"next-page\""))
        }
    }

    @Test func communicatorsCannotOpenOrImport() async throws {
        try await HubHarness.with(seed: PortalTests.seed) { hub in
            var ann = PortalBrowser(hub: hub)
            let menu = try await ann.login("ann", HubHarness.annPassword)
            #expect(menu.status == .seeOther)
            let page = try await ann.get("/portal")
            #expect(!page.text.contains("/portal/admin/groups"))
            #expect(try await ann.get("/portal/admin/groups").status == .forbidden)
            let refused = try await ann.postMultipart(
                "/portal/admin/groups",
                [
                    "_csrf": try PortalBrowser.csrf(in: page), "id": "g", "name": "G",
                ], file: ("roster", "g.csv", "p1\n"))
            #expect(refused.status == .forbidden)
            #expect(try await GroupService(database: hub.database).all().isEmpty)
        }
    }

    @Test func aRosterFileSkipsBlankLinesAndItsHeaderAndNamesBadLines() {
        let roster = RosterCSV("\u{FEFF}person\n\n a \r\n\"b \"\"q\"\"\"\nperson\n")
        #expect(roster.persons == ["a", "b \"q\"", "person"])  // only the first line is a header
        #expect(roster.problems.isEmpty)
        let bad = RosterCSV((1...8).map { _ in String(repeating: "y", count: 257) }.joined(separator: "\n"))
        #expect(bad.problemCount == 8 && bad.problems.count == RosterCSV.maximumProblems)
        #expect(bad.problems.first?.hasPrefix("Line 1: ") == true)
    }

    @Test func aMultipartBodyGivesItsNamedPartsAsText() throws {
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\"abc\"") == "abc")
        #expect(MultipartForm.boundary(contentType: "application/x-www-form-urlencoded") == nil)
        let body =
            "preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"r.csv\"\r\nContent-Type: text/csv\r\n\r\n"
            + "x\r\ny\r\n\r\n--XyZ--\r\n"
        let fields = try #require(MultipartForm.fields(of: Array(body.utf8), boundary: "XyZ"))
        #expect(fields.map(\.name) == ["a", "f"] && fields.map(\.value) == ["1", "x\r\ny\r\n"])
        #expect(MultipartForm.fields(of: Array("--XyZ\r\nno end".utf8), boundary: "XyZ") == nil)
    }

    /// The value of `attribute` on the element with `id` in `html`.
    static func attribute(_ attribute: String, ofID id: String, in html: String) -> String? {
        guard let element = html.range(of: "id=\"\(id)\"") else { return nil }
        let tagStart = html[..<element.lowerBound].lastIndex(of: "<") ?? html.startIndex
        let tag = html[tagStart..<(html[element.upperBound...].firstIndex(of: ">") ?? html.endIndex)]
        guard let start = tag.range(of: "\(attribute)=\"")?.upperBound,
            let end = tag[start...].firstIndex(of: "\"")
        else { return nil }
        return String(tag[start..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }
}

extension PortalBrowser {
    /// Sends a form with a file as a browser does (`multipart/form-data`), with the browser's cookies.
    func postMultipart(_ uri: String, _ fields: [String: String], file: (field: String, name: String, text: String))
        async throws -> TestResponse
    {
        let boundary = "----msiTestBoundary\(UUID().uuidString.prefix(8))"
        var body = ""
        for (name, value) in fields {
            body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        body +=
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(file.field)\"; filename=\"\(file.name)\"\r\n"
            + "Content-Type: text/csv\r\n\r\n\(file.text)\r\n--\(boundary)--\r\n"
        var headers: HTTPFields = [:]
        headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await hub.client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }
}

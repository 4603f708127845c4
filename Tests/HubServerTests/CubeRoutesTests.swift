import DAO
import Foundation
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

typealias Legacy = Fixtures.Legacy

@Suite("The legacy cube routes")
struct CubeRoutesTests {
    @Test func getChannelServesTheLegacyHubsJSONUnknownFieldsIncluded() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let response = try await hub.request(.get, "/channel")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/json; charset=utf-8")
            let expected = try String(
                contentsOf: Fixtures.directory.appendingPathComponent("legacy-channel.expected.json"),
                encoding: .utf8)
            #expect(response.text == expected.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test func postAreaAnswers201WithTheStoredArea() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let response = try await hub.request(
                .post, "/area/\(Legacy.channelID.hex)", as: .admin,
                json: #"{"name": "Exams", "desc": "Exam timetable"}"#)
            #expect(response.status == .created)
            let area = try response.json()
            let id = try #require(area["id"]?.stringValue.flatMap { ObjectID(hex: $0) })
            #expect(area.keys == ["id", "name", "desc", "access", "subjects"])
            let stored = try #require(try await hub.channel(Legacy.channelID))
            let last = stored["areas"]?.arrayValue?.last?.documentValue
            #expect(
                last == ["id": .objectID(id), "name": "Exams", "desc": "Exam timetable", "access": [], "subjects": []])
        }
    }

    @Test func putAndDeleteAreaAnswer200And204() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let put = try await hub.request(
                .put, "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", as: .admin,
                json: #"{"name": "Libraries", "desc": "All of them"}"#)
            #expect(put.status == .ok)
            #expect(try put.json()["name"] == "Libraries")
            #expect(try put.json()["color"] == "#336699")
            let delete = try await hub.request(
                .delete, "/area/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)", as: .admin)
            #expect(delete.status == .noContent)
            #expect(try await hub.channel(Legacy.channelID)?["areas"]?.arrayValue?.count == 1)
        }
    }

    @Test func subjectsAreAddedUpdatedAndDeleted() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let base = "/subject/\(Legacy.channelID.hex)/\(Legacy.sportsID.hex)"
            let post = try await hub.request(
                .post, base, as: .admin,
                json:
                    #"{"name": "Results", "desc": "Match results", "opt": {"level": "Recommended", "distribution": "Alert"}}"#
            )
            #expect(post.status == .created)
            let subject = try post.json()
            let id = try #require(subject["id"]?.stringValue)
            #expect(subject["topic_key"] == .string("\(Legacy.channelID.hex)-\(Legacy.sportsID.hex)-\(id)"))
            #expect(subject["opt"] == ["level": "Recommended", "distribution": "Alert"])
            #expect(subject["tags"] == [] && subject["access"] == [])

            let put = try await hub.request(
                .put, "\(base)/\(id)", as: .admin,
                json:
                    #"{"name": "Scores", "desc": "d", "opt": {"level": "", "distribution": "Information"}, "access": ["ann"]}"#
            )
            #expect(put.status == .ok)
            #expect(try put.json()["access"] == ["ann"])
            #expect(try put.json()["topic_key"] == subject["topic_key"])

            #expect(try await hub.request(.delete, "\(base)/\(id)", as: .admin).status == .noContent)
            #expect(try await hub.request(.delete, "\(base)/\(id)", as: .admin).errorCode == "subject_not_found")
        }
    }

    @Test func channelsHaveFullCRUD() async throws {
        try await HubHarness.with { hub in
            let post = try await hub.request(
                .post, "/channel", as: .admin, json: #"{"name": "Staff", "desc": "Staff news"}"#)
            #expect(post.status == .created)
            let id = try #require(try post.json()["_id"]?.stringValue)
            #expect(try post.json()["areas"] == [])
            let get = try await hub.request(.get, "/channel/\(id)")
            #expect(try get.json()["name"] == "Staff")
            let put = try await hub.request(
                .put, "/channel/\(id)", as: .admin, json: #"{"name": "All staff", "desc": ""}"#)
            #expect(try put.json()["name"] == "All staff")
            #expect(try await hub.request(.delete, "/channel/\(id)", as: .admin).status == .noContent)
            #expect(try await hub.request(.get, "/channel/\(id)").status == .notFound)
        }
    }

    @Test(arguments: [
        ("/area/\(Legacy.channelID.hex)/\(ObjectIDs.missing)", "area_not_found"),
        ("/area/\(ObjectIDs.missing)/\(Legacy.libraryID.hex)", "channel_not_found"),
        ("/subject/\(Legacy.channelID.hex)/\(Legacy.libraryID.hex)/\(ObjectIDs.missing)", "subject_not_found"),
        ("/subject/\(Legacy.channelID.hex)/\(ObjectIDs.missing)/\(Legacy.hoursID.hex)", "area_not_found"),
    ])
    func unknownElementsAre404NamingWhichOne(path: String, code: String) async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let body =
                path.hasPrefix("/area")
                ? #"{"name": "n", "desc": "d"}"#
                : #"{"name": "n", "desc": "d", "opt": {"level": "", "distribution": "Alert"}}"#
            for method in [HTTPRequest.Method.put, .delete] {
                let response = try await hub.request(method, path, as: .admin, json: method == .put ? body : nil)
                #expect(response.status == .notFound)
                #expect(response.errorCode == code)
            }
        }
    }

    @Test func onlyAdminsSeeTheAccessListsAndEveryoneElseGetsThemEmptyInTheLegacyShape() async throws {
        try await HubHarness.with { hub in
            let channel = try await hub.request(
                .post, "/channel", as: .admin,
                json: #"{"name": "Campus", "desc": "d", "access": ["ann", "bob"]}"#)
            let channelID = try #require(try channel.json()["_id"]?.stringValue)
            let area = try await hub.request(
                .post, "/area/\(channelID)", as: .admin,
                json: #"{"name": "Sports", "desc": "d", "access": ["ann"]}"#)
            let areaID = try #require(try area.json()["id"]?.stringValue)
            let subject = try await hub.request(
                .post, "/subject/\(channelID)/\(areaID)", as: .admin,
                json: """
                    {"name": "Results", "desc": "d", "opt": {"level": "", "distribution": "Information"},
                     "access": ["bulletin-bot"]}
                    """)
            #expect(subject.status == .created)

            // Admins: the lists as stored, in an answer no shared cache keeps for others.
            for path in ["/channel", "/channel/\(channelID)"] {
                let admin = try await hub.request(.get, path, as: .admin)
                #expect(admin.status == .ok)
                #expect(admin.text.contains(#""access":["ann","bob"]"#), "\(path)")
                #expect(admin.text.contains(#""access":["bulletin-bot"]"#), "\(path)")
                #expect(admin.headers[.cacheControl] == "private, no-cache", "\(path)")
                // Anonymous callers (the prepared answer), communicators, portal users and devices: every list
                // empty, every other byte as the admins' answer has it.
                let expected = admin.text.replacingOccurrences(of: #""access":["ann","bob"]"#, with: #""access":[]"#)
                    .replacingOccurrences(of: #""access":["ann"]"#, with: #""access":[]"#)
                    .replacingOccurrences(of: #""access":["bulletin-bot"]"#, with: #""access":[]"#)
                let callers: [HubHarness.Caller] = [
                    .anonymous, .communicator, .basic("ann", HubHarness.annPassword),
                    .token("msd_not-a-device-secret"),
                ]
                for caller in callers {
                    let answer = try await hub.request(.get, path, as: caller)
                    #expect(answer.status == .ok, "\(path) \(caller)")
                    #expect(answer.text == expected, "\(path) \(caller)")
                    #expect(answer.headers[.cacheControl] == "public, no-cache", "\(path) \(caller)")
                }
                // The redacted answer has its own ETag: a conditional request does not cross between them.
                #expect(try await hub.request(.get, path).headers[.eTag] != admin.headers[.eTag])
            }
        }
    }
}

enum ObjectIDs {
    static let missing = "aaaaaaaaaaaaaaaaaaaaaaaa"
}

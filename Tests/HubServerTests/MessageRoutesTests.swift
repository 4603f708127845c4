import DAO
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("Messages over HTTP")
struct MessageRoutesTests {
    static func body(
        topic: String = Legacy.hoursTopic, distribution: String = "Alert", desc: String = "Closed today",
        title: String = "Library"
    ) -> String {
        #"{"title": "\#(title)", "desc": "\#(desc)", "message": "The library is closed all day.", "topic_key": "\#(topic)", "distribution": "\#(distribution)"}"#
    }

    @Test func postMessageStoresItAndAnswers201WithKeyAndTimestamp() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let response = try await hub.request(.post, "/message", as: .communicator, json: Self.body())
            #expect(response.status == .created)
            let message = try response.json()
            let msiKey = try #require(message["msi_key"]?.stringValue.flatMap { ObjectID(hex: $0) })
            #expect((message["timestamp"]?.int64Value ?? 0) > 1_700_000_000_000)
            #expect(message["sender"] == "bulletin-bot")
            let stored = try #require(
                try await hub.database.collection(CollectionName.message).findOne(["msi_key": .objectID(msiKey)]))
            #expect(
                stored["title"] == "Library" && stored["distribution"] == "Alert"
                    && stored["topic_key"] == .string(Legacy.hoursTopic))
            #expect(stored["timestamp"].map { if case .int64 = $0 { true } else { false } } == true)

            let fetched = try await hub.request(.get, "/message/\(msiKey.hex)")
            #expect(fetched.status == .ok)
            #expect(try fetched.json()["msi_key"] == .string(msiKey.hex))
            #expect(try await hub.request(.get, "/message/\(ObjectIDs.missing)").errorCode == "message_not_found")
        }
    }

    @Test func refusedMessagesChangeNothing() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let cases: [(String, Int, String)] = [
                (Self.body(topic: "no-such-topic"), 404, "topic_not_found"),
                (Self.body(distribution: "Information"), 422, "distribution_mismatch"),
                (Self.body(desc: ""), 422, "empty_field"),
                (Self.body(distribution: "Loud"), 422, "invalid_field"),
                (Self.body(title: String(repeating: "t", count: 501)), 422, "field_too_long"),
                (
                    #"{"title": "t", "desc": "d", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert"}"#, 422,
                    "missing_field"
                ),
            ]
            for (body, status, code) in cases {
                let response = try await hub.request(.post, "/message", as: .communicator, json: body)
                #expect(response.status.code == status, "\(code)")
                #expect(response.errorCode == code)
            }
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 0)
        }
    }

    @Test func historyPagesNewestFirstWithAStableCursor() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let books = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e04"
            for index in 0..<5 {
                _ = try await hub.request(
                    .post, "/message", as: .communicator, json: Self.body(title: "alert \(index)"))
                _ = try await hub.request(
                    .post, "/message", as: .communicator,
                    json: Self.body(topic: books, distribution: "Information", desc: "", title: "info \(index)"))
            }
            let first = try await hub.request(.get, "/message?topic_key=\(Legacy.hoursTopic)&limit=3")
            #expect(first.status == .ok)
            let page = try first.json()
            #expect(
                page["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue } == [
                    "alert 4", "alert 3", "alert 2",
                ])
            let cursor = try #require(page["next_cursor"]?.stringValue)
            _ = try await hub.request(.post, "/message", as: .communicator, json: Self.body(title: "late"))
            let second = try await hub.request(.get, "/message?topic_key=\(Legacy.hoursTopic)&limit=3&cursor=\(cursor)")
                .json()
            #expect(
                second["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue } == [
                    "alert 1", "alert 0",
                ])
            #expect(second["next_cursor"] == .null)

            let both = try await hub.request(
                .get, "/message?topic_key=\(Legacy.hoursTopic)&topic_key=\(books)&limit=200"
            ).json()
            #expect(both["messages"]?.arrayValue?.count == 11)
            let comma = try await hub.request(.get, "/message?topic_key=\(Legacy.hoursTopic),\(books)").json()
            #expect(comma["messages"]?.arrayValue?.count == 11)
        }
    }

    @Test func postMessageStoresAPendingRelayPlanWithTTLAndSchedule() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let sendAt = UnixTime.nowMilliseconds() + 3_600_000
            let body =
                #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert", "ttl": 600, "send_at": \#(sendAt)}"#
            let response = try await hub.request(.post, "/message", as: .communicator, json: body)
            #expect(response.status == .created)
            let relay = try #require(try response.json()["relay"]?.documentValue)
            #expect(relay["state"] == "pending")
            #expect(relay["due_at"]?.int64Value == sendAt)
            #expect(relay["expires_at"]?.int64Value == sendAt + 600_000)
            #expect(relay["ttl"]?.int64Value == 600)
            #expect(relay["components"]?.documentValue?.keys == ["notification", "data"])
            let stored = try #require(try await hub.database.collection(CollectionName.message).findOne([:]))
            let state = try #require(RelayState(message: stored))
            #expect(state.unsent == [.notification, .data])

            for bad in [
                #""ttl": -1"#, #""ttl": "10""#, #""ttl": 99999999"#, #""send_at": "soon""#,
                #""send_at": 99999999999999"#,
            ] {
                let refused = try await hub.request(
                    .post, "/message", as: .communicator,
                    json:
                        #"{"title": "t", "desc": "d", "message": "m", "topic_key": "\#(Legacy.hoursTopic)", "distribution": "Alert", \#(bad)}"#
                )
                #expect(refused.status == .unprocessableContent, "\(bad)")
                #expect(refused.errorCode == "invalid_field")
            }
            #expect(try await hub.database.collection(CollectionName.message).countDocuments() == 1)
        }
    }

    @Test(arguments: ["limit=0", "limit=201", "limit=ten", "since=-1", "since=yesterday", "cursor=abc"])
    func badHistoryQueriesAre400(query: String) async throws {
        try await HubHarness.with { hub in
            let response = try await hub.request(.get, "/message?\(query)")
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "invalid_query")
        }
    }
}

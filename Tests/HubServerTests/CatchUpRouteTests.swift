import DAO
import FakeFCM
import Foundation
import HTTPTypes
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

/// `GET /device/:deviceID/messages`: what a phone that was off receives, through the route.
@Suite("Catch-up route")
struct CatchUpRouteTests {
    @Test func aDeviceGetsTheMessagesOfItsSubscriptionsOldestFirstPageByPage() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let phone = try await hub.register("catch-up-a")
                // Forced and Recommended are its subscriptions; the optional one is not.
                var sent: [String: String] = [:]
                for (index, (topic, json)) in [
                    (DeviceTests.forced, RelayOutboxTests.alert("A0")),
                    (DeviceTests.optional, RelayOutboxTests.information("B0")),
                    (DeviceTests.forced, RelayOutboxTests.alert("A1")),
                    (DeviceTests.recommended, Self.fixture("F0")),
                    (DeviceTests.forced, RelayOutboxTests.alert("A2", extra: #", "ttl": 0"#)),
                    (DeviceTests.recommended, Self.fixture("F1", extra: #", "ttl": 3600"#)),
                    (
                        DeviceTests.forced,
                        RelayOutboxTests.alert("A3", extra: #", "send_at": \#(UnixTime.nowMilliseconds() + 3_600_000)"#)
                    ),
                ].enumerated() {
                    let answer = try await hub.request(.post, "/message", as: .admin, json: json)
                    #expect(answer.status == .created, "message \(index) to \(topic)")
                    sent[try answer.json()["title"]?.stringValue ?? ""] = try answer.json()["msi_key"]?.stringValue
                }
                var titles: [String] = []
                var cursor: String?
                var pages = 0
                repeat {
                    let uri =
                        "/device/\(phone.deviceID)/messages?since=0&limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                    let page = try await hub.request(.get, uri, as: .token(phone.secret))
                    #expect(page.status == .ok)
                    let body = try page.json()
                    titles += body["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue } ?? []
                    cursor = body["next_cursor"]?.stringValue
                    pages += 1
                } while cursor != nil && pages < 10
                // Not the optional subject's, not the one whose ttl ran out, not the one scheduled for later.
                #expect(titles == ["A0", "A1", "F0", "F1"])
                #expect(pages == 2)

                // `since` is inclusive: asking from F0's timestamp gives F0 and what follows.
                let f0 = try await hub.request(.get, "/message/\(sent["F0"] ?? "")").json()
                let since = try #require(f0["timestamp"]?.int64Value)
                let fromF0 = try await hub.request(
                    .get, "/device/\(phone.deviceID)/messages?since=\(since)", as: .token(phone.secret))
                #expect(
                    try fromF0.json()["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue }
                        == ["F0", "F1"])
                #expect(try fromF0.json()["next_cursor"] == .null)

                // A subject left is no longer caught up.
                _ = try await hub.request(
                    .delete, "/device/\(phone.deviceID)/subscriptions/\(DeviceTests.recommended)",
                    as: .token(phone.secret))
                let left = try await hub.request(.get, "/device/\(phone.deviceID)/messages", as: .token(phone.secret))
                #expect(
                    try left.json()["messages"]?.arrayValue?.compactMap { $0.documentValue?["title"]?.stringValue }
                        == ["A0", "A1"])
            }
        }
    }

    @Test func aCatchUpNeedsTheDevicesSecretAndAValidQuery() async throws {
        try await FakeFCM.with { fake in
            try await DeviceTests.with(fake) { hub in
                let phone = try await hub.register("catch-up-b")
                let other = try await hub.register("catch-up-c")
                let path = "/device/\(phone.deviceID)/messages"
                #expect(try await hub.request(.get, path).status == .unauthorized)
                #expect(try await hub.request(.get, path, as: .token(other.secret)).status == .unauthorized)
                #expect(try await hub.request(.get, path, as: .admin).status == .unauthorized)
                #expect(
                    try await hub.request(.get, "/device/nope/messages", as: .token(phone.secret)).status == .badRequest
                )
                for query in ["limit=0", "limit=201", "limit=x", "since=-1", "since=soon", "cursor=junk"] {
                    let answer = try await hub.request(.get, "\(path)?\(query)", as: .token(phone.secret))
                    #expect(answer.status == .badRequest && answer.errorCode == "invalid_query", "\(query)")
                }
                let empty = try await hub.request(.get, "\(path)?limit=200", as: .token(phone.secret))
                #expect(empty.status == .ok && empty.text == #"{"messages":[],"next_cursor":null}"#)
            }
        }
    }

    /// A Recommended subject's Information message in the legacy channel.
    static func fixture(_ title: String, extra: String = "") -> String {
        #"{"title": "\#(title)", "desc": "", "message": "Fixtures changed.", "topic_key": "\#(DeviceTests.recommended)", "distribution": "Information"\#(extra)}"#
    }
}

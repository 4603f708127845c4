import Foundation
import MSIKit
import Testing

/// A daily digest as FCM delivers it, through the client with no hub: kept as the last digest, never stored as a
/// message; an older one arriving late does not replace a newer one.
@Suite("Listener: daily digests")
struct DigestPayloadTests {
    static func payload(id: String, count: Int, timestamp: Int64, items: String) -> [String: String] {
        [
            "msi_key": id, "audience": "digest", "dist": "Alert", "title": "\(count) new: Library \(count)",
            "desc": "First", "message": "", "timestamp": String(timestamp), "urgency": "active",
            "count": String(count), "listed": "1", "items": items,
        ]
    }

    @Test func aDigestIsKeptAsTheLastOneAndNeverStoredAsAMessage() async throws {
        let configuration = MSIClient.Configuration(hub: URL(string: "http://127.0.0.1:9")!, directory: nil)
        let client = try MSIClient(configuration: configuration, push: SilentPush())
        #expect(try await client.lastDigest() == nil)
        let items = #"[{"msi_key":"65f0c0ffee0000000000d001","title":"Library closed","from":"Library","timestamp":5}]"#
        let received = try await client.receive(
            payload: Self.payload(id: "65f0c0ffee0000000000dd02", count: 3, timestamp: 2_000, items: items))
        #expect(received == nil)
        #expect(try await client.store.messages().isEmpty)
        let digest = try #require(try await client.lastDigest())
        #expect(digest.count == 3 && digest.summary == "3 new: Library 3" && digest.timestamp == 2_000)
        #expect(digest.items.map(\.msiKey) == ["65f0c0ffee0000000000d001"] && digest.items.first?.from == "Library")
        // Yesterday's, late: the newer stays.
        _ = try await client.receive(
            payload: Self.payload(id: "65f0c0ffee0000000000dd01", count: 9, timestamp: 1_000, items: "[]"))
        #expect(try await client.lastDigest()?.count == 3)
    }
}

import Foundation
import HubModel
import Testing

@testable import FCM

/// A daily digest as one push (`FCMDigest`): the summary names the sources by count, the list fits FCM's 4 KB
/// whatever the day held, the count stays exact, and the data says it is a digest.
@Suite("FCM mapping of a daily digest")
struct DigestMappingTests {
    static func entries(_ counts: [(String, Int)], title: (Int) -> String = { "Message \($0)" }) -> [FCMDigest.Entry] {
        var entries: [FCMDigest.Entry] = []
        for (from, count) in counts {
            for _ in 0..<count {
                let index = entries.count
                entries.append(
                    FCMDigest.Entry(
                        msiKey: String(format: "65f1c0ffee%014x", index), title: title(index), from: from,
                        timestamp: 1_700_000_000_000 + Int64(index)))
            }
        }
        return entries
    }

    @Test func theSummaryCountsEachSourceTheMostFirst() {
        let digest = FCMDigest(
            id: "65f1c0ffee00000000000fff", entries: Self.entries([("Chess club", 2), ("Library", 3)]), timestamp: 0)
        #expect(digest.summary == "5 new: Library 3, Chess club 2")
        let many = FCMDigest(
            id: "65f1c0ffee00000000000fff",
            entries: Self.entries([("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 1), ("F", 2)]), timestamp: 0)
        #expect(many.summary == "7 new: F 2, A 1, B 1, C 1, 2 more")
    }

    @Test(arguments: [2_048, 4_096])
    func aLongDayFitsThePayloadLimitWithTheCountExact(limit: Int) throws {
        let long = String(repeating: "Ü", count: 200)
        let digest = FCMDigest(
            id: "65f1c0ffee00000000000fff",
            entries: Self.entries([("Library", 150), ("Sports", 150)], title: { "\($0) \(long)" }), timestamp: 1)
        var options = FCMMappingOptions()
        options.payloadLimit = limit
        let request = FCMMapping.digestRequest(digest, token: "t", options: options)
        #expect(request.payloadSize <= limit && !request.isTruncated)
        let wire = try #require(
            try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        let message = try #require(wire["message"] as? [String: Any])
        let data = try #require(message["data"] as? [String: String])
        #expect(data["audience"] == "digest" && data["count"] == "300")
        let items = try #require(
            try JSONSerialization.jsonObject(with: Data((data["items"] ?? "").utf8)) as? [[String: Any]])
        #expect(items.count == Int(data["listed"] ?? "") && items.count >= limit / 1_000 && items.count < 300)
        #expect(items.first?["msi_key"] as? String == digest.entries[0].msiKey)
        #expect((items.first?["title"] as? String)?.count == FCMDigest.titleLength)
        #expect((message["notification"] as? [String: Any])?["title"] as? String == "300 new: Library 150, Sports 150")
    }
}

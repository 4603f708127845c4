import CompressNIO
import DAO
import Foundation
@testable import HubCore
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import Mongo
import MongoTestSupport
import Testing

@Suite("GET /channel from memory", .tags(.faults))
struct CubeCacheTests {
    @Test func etagsAnswer304AndGzipDecompressesToThePlainBody() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let plain = try await hub.request(.get, "/channel")
            let etag = try #require(plain.headers[.eTag])
            #expect(plain.headers[.cacheControl] == "public, no-cache")
            #expect(plain.headers[.vary] == "Accept-Encoding")

            let conditional = try await hub.client.execute(uri: "/channel", method: .get, headers: [.ifNoneMatch: etag])
            #expect(conditional.status == .notModified)
            #expect(conditional.body.readableBytes == 0)
            #expect(conditional.headers[.eTag] == etag)
            let stale = try await hub.client.execute(
                uri: "/channel", method: .get, headers: [.ifNoneMatch: "\"other\""])
            #expect(stale.status == .ok)

            let gzip = try await hub.client.execute(
                uri: "/channel", method: .get, headers: [.acceptEncoding: "gzip, deflate"])
            #expect(gzip.headers[.contentEncoding] == "gzip")
            var compressed = gzip.body
            let decompressed = try compressed.decompress(with: .gzip())
            #expect(decompressed == plain.body)
            #expect(gzip.body.readableBytes < plain.body.readableBytes)
            let gzipTag = try #require(gzip.headers[.eTag])
            #expect(gzipTag != etag)
            let gzip304 = try await hub.client.execute(
                uri: "/channel", method: .get,
                headers: [.acceptEncoding: "gzip", .ifNoneMatch: gzipTag])
            #expect(gzip304.status == .notModified)
            let refused = try await hub.client.execute(
                uri: "/channel", method: .get, headers: [.acceptEncoding: "gzip;q=0"])
            #expect(refused.headers[.contentEncoding] == nil)

            let one = try await hub.request(.get, "/channel/\(Legacy.channelID.hex)")
            #expect(one.headers[.eTag] != nil && one.headers[.eTag] != etag)
            #expect(try one.json()["name"] == "Campus")
        }
    }

    @Test func aWriteIsVisibleToTheNextReadAndChangesTheETag() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let before = try #require(try await hub.request(.get, "/channel").headers[.eTag])
            let post = try await hub.request(
                .post, "/area/\(Legacy.channelID.hex)", as: .admin, json: #"{"name": "New", "desc": ""}"#)
            #expect(post.status == .created)
            let after = try await hub.request(.get, "/channel")
            #expect(after.headers[.eTag] != before)
            #expect(after.text.contains("\"name\":\"New\""))
            let stale = try await hub.client.execute(uri: "/channel", method: .get, headers: [.ifNoneMatch: before])
            #expect(stale.status == .ok)
        }
    }

    @Test func aWriteThroughAnotherProcessIsSeenOnceItsCopyIsConfirmedAfterIt() async throws {
        try await HubHarness.with(seed: HubHarness.legacy) { hub in
            let uri = try HubProcess.uri(of: hub.database)
            let other = try await HubProcess(mongoURI: uri)
            defer { other.stop() }
            #expect(try await other.get("/channel").status == 200)

            // Once the other process's copy was confirmed as of a moment after the write, its reads serve the write:
            // "within a second" is that order, a follower confirming several times a second, and a copy
            // unconfirmed for a second not being trusted (HubCoreTests' FreshnessTests).
            let post = try await hub.request(
                .post, "/channel", as: .admin, json: #"{"name": "Written here", "desc": ""}"#)
            #expect(post.status == .created)
            try await Self.confirmed(other, after: .now)
            #expect(String(decoding: try await other.get("/channel").body, as: UTF8.self).contains("Written here"))

            // A change made directly in the database reaches both: the separate process in that order; the hub
            // inside this test process (whose metrics the other suites' hubs share) at all.
            try await hub.database.collection(CollectionName.icube).updateOne(
                ["_id": .objectID(Legacy.channelID)], ["$set": ["name": "Renamed by hand"]])
            try await Self.confirmed(other, after: .now)
            #expect(String(decoding: try await other.get("/channel").body, as: UTF8.self).contains("Renamed by hand"))
            try await eventually("this process's hub serves the change") {
                try await hub.request(.get, "/channel").text.contains("Renamed by hand")
            }
        }
    }

    /// Waits until the database confirmed `other`'s cube as of a moment after `change`: its
    /// `msi_cube_confirmed_age_seconds`, read in a scrape sent at `asked`, puts the confirmation at or after
    /// `asked - age`. No time bound is asserted: the wait ends when the follower confirms, however busy the machine.
    static func confirmed(_ other: HubProcess, after change: ContinuousClock.Instant) async throws {
        try await eventually("the other process's cube confirmed after the change") {
            let asked = ContinuousClock.now
            let metrics = String(decoding: try await other.get("/metrics").body, as: UTF8.self)
            guard let age = MetricsTests.sample(metrics, "msi_cube_confirmed_age_seconds") else { return false }
            return asked - .seconds(age) > change
        }
    }
}

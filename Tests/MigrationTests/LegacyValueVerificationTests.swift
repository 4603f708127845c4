@testable import Migration
import Mongo
import MongoTestSupport
import Testing

/// Channels holding dates, decimals and binary data verify as clients read them: an ISO string, a
/// `{"$numberDecimal": …}` object, base64.
@Suite struct LegacyValueVerificationTests {
    /// A legacy channel as the legacy hub left it: ids as hex strings, no `access`, and values of the
    /// BSON types the legacy JSON writes in their own shapes.
    private static func legacyChannel() throws -> BSONDocument {
        [
            "_id": "5a1b2c3d4e5f60718293a4b5", "name": "Dated",
            "created": .datetime(1_503_910_800_000), "founded": .datetime(-86_400_001),
            "fee": .decimal128(try #require(BSONDecimal128("1.10"))), "big": .int64(9_007_199_254_740_993),
            "logo": .binary(BSONBinary(data: Array("hello".utf8))), "ratio": 1.0,
            "areas": [["id": "5a1b2c3d4e5f60718293a4b6", "name": "A", "opened": .datetime(0), "subjects": []]],
        ]
    }

    private static func normalised(_ channel: BSONDocument) -> BSONDocument {
        var tally = RuleTally()
        return ChannelNormaliser().normalise(channel, tally: &tally)
    }

    @Test func aNormalisedChannelWithADateADecimalAndBinaryVerifiesClean() throws {
        let legacy = try Self.legacyChannel()
        let target = Self.normalised(legacy)
        #expect(target["created"] == .datetime(1_503_910_800_000))
        let verification = ChannelVerifier().verify(sources: [legacy], targets: [target])
        #expect(verification.passed, "\(verification.mismatches)")
        #expect(verification.matching == 1)
    }

    @Test func theServedJSONReadBackVerifiesClean() throws {
        let legacy = try Self.legacyChannel()
        let served = LegacyJSONWriter().bytes(Self.normalised(legacy))
        let readBack = try JSONParser(refusesOperatorKeys: false).document(from: served)
        #expect(readBack["created"] == "2017-08-28T09:00:00.000Z")
        #expect(readBack["fee"] == ["$numberDecimal": "1.10"])
        let verification = ChannelVerifier().verify(sources: [legacy], targets: [readBack])
        #expect(verification.passed, "\(verification.mismatches)")
    }

    @Test(arguments: [
        ("created", BSONValue.datetime(1_503_910_800_001), "created"),
        ("created", .int64(1_503_910_800_000), "created"),
        ("fee", .decimal128(BSONDecimal128("1.1")!), "fee.$numberDecimal"),
        ("logo", .binary(BSONBinary(data: Array("hellO".utf8))), "logo"),
        ("big", .int64(9_007_199_254_740_992), "big"),
    ])
    func aChangedValueIsAMismatchWhereItsJSONDiffers(key: String, value: BSONValue, path: String) throws {
        let legacy = try Self.legacyChannel()
        var target = Self.normalised(legacy)
        target[key] = value
        let verification = ChannelVerifier().verify(sources: [legacy], targets: [target])
        #expect(verification.mismatches == [#""5a1b2c3d4e5f60718293a4b5" at "# + path])
    }

    @Test func aBase64StringThatLooksLikeAnObjectIDIsComparedAsItIs() throws {
        // 18 bytes make 24 base64 characters, which may all be hex digits, in either case.
        let legacy: BSONDocument = ["_id": "5a1b2c3d4e5f60718293a4b5", "key": "ABCDEF0123456789ABCDEF01"]
        let verification = ChannelVerifier().verify(sources: [legacy], targets: [Self.normalised(legacy)])
        #expect(verification.passed, "\(verification.mismatches)")
    }

    @Test func migratingALegacyChannelWithDatesVerifiesClean() async throws {
        try await TestDatabase.with("legacyDates") { legacy in
            _ = try await legacy.collection("icube").insertOne(try Self.legacyChannel())
            try await TestDatabase.with("targetDates") { target in
                let report = try await Migrator(target: target, options: .quiet()).migrate(from: legacy)
                #expect(report.completed)
                #expect(report.verification?.passed == true, "\(report.verification?.mismatches ?? [])")
                #expect(report.verification?.matching == 1)
                let stored = try await target.collection("icube").find()
                #expect(stored.first?["created"] == .datetime(1_503_910_800_000))
                #expect(stored.first?["fee"] == .decimal128(BSONDecimal128("1.10")!))
            }
        }
    }
}

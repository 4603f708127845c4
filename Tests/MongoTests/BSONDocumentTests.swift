@testable import Mongo
import Testing

@Suite("BSON documents")
struct BSONDocumentTests {
    /// One value of every BSON type.
    static let everyType: BSONDocument = [
        "double": .double(3.25),
        "string": "héllo\u{0}wörld",
        "document": ["nested": ["deeper": true]],
        "array": [1, "two", [3], ["four": 4]],
        "binary": .binary(BSONBinary(subtype: 4, data: Array(0..<16))),
        "emptyBinary": .binary(BSONBinary(subtype: 0, data: [])),
        "undefined": .undefined,
        "objectID": .objectID(ObjectID(hex: "5a1b2c3d4e5f60718293a4b5")!),
        "bool": false,
        "datetime": .datetime(1_700_000_000_123),
        "null": nil,
        "regex": .regex(BSONRegex(pattern: "^a.*b$", options: "im")),
        "dbPointer": .dbPointer(collection: "icube", id: ObjectID(hex: "000000000000000000000001")!),
        "javascript": .javascript("function () { return 1 }"),
        "symbol": .symbol("sym"),
        "javascriptWithScope": .javascriptWithScope(code: "x + 1", scope: ["x": 1]),
        "int32": .int32(-7),
        "timestamp": .timestamp(BSONTimestamp(seconds: 1_700_000_000, increment: 9)),
        "int64": .int64(Int64.max),
        "decimal128": .decimal128(BSONDecimal128("1234.5678")!),
        "minKey": .minKey,
        "maxKey": .maxKey,
    ]

    @Test func everyTypeRoundTripsThroughLibbson() throws {
        let document = Self.everyType
        let reread = try BSONDocument(bytes: document.bytes)
        #expect(reread.keys == document.keys)
        for (key, value) in document.elements {
            #expect(reread[key] == value, "\(key)")
        }
        // Rebuilding from the decoded values gives the same bytes: nothing was lost on the way.
        #expect(BSONDocument(reread.elements).bytes == document.bytes)
        // libbson's own Extended JSON reader and writer agree with us too.
        let viaExtendedJSON = try BSONDocument(extendedJSON: document.extendedJSON(.canonical))
        #expect(viaExtendedJSON == document)
    }

    @Test func keysKeepTheirOrderAndSubscriptsEdit() {
        var document: BSONDocument = ["b": 1, "a": 2, "c": 3]
        #expect(document.keys == ["b", "a", "c"])
        document["a"] = "changed"
        document["d"] = 4
        document["b"] = nil
        #expect(document.keys == ["a", "c", "d"])
        #expect(document["a"] == "changed")
        #expect(document["missing"] == nil)
        #expect(document.count == 3)
    }

    @Test func dottedPathsReachNestedFields() {
        let document: BSONDocument = ["opt": ["level": "Forced", "distribution": "Alert"]]
        #expect(document[path: "opt.level"] == "Forced")
        #expect(document[path: "opt.missing"] == nil)
        #expect(document[path: "opt.level.deeper"] == nil)
    }

    @Test func copiesAreIndependent() {
        let original: BSONDocument = ["name": "first"]
        var copy = original
        copy["name"] = "second"
        #expect(original["name"] == "first")
        #expect(copy["name"] == "second")
    }

    @Test func integerLiteralsBecomeInt32WhenTheyFit() {
        let document: BSONDocument = ["small": 5, "large": 5_000_000_000]
        #expect(document["small"] == .int32(5))
        #expect(document["large"] == .int64(5_000_000_000))
        #expect(document["small"]?.int64Value == 5)
        #expect(BSONValue.double(2.0).int64Value == 2)
        #expect(BSONValue.double(2.5).int64Value == nil)
    }

    @Test(arguments: [
        [UInt8](),
        [5, 0, 0, 0],
        [5, 0, 0, 0, 1],
        [6, 0, 0, 0, 0],
        [200, 0, 0, 0, 0],
    ])
    func malformedBytesAreRefused(bytes: [UInt8]) {
        #expect(throws: MongoError.self) { try BSONDocument(bytes: bytes) }
    }

    @Test func truncatedAndCorruptDocumentsAreRefused() throws {
        let bytes = Self.everyType.bytes
        for length in 0..<bytes.count {
            #expect(throws: MongoError.self) { try BSONDocument(bytes: Array(bytes.prefix(length))) }
        }
        var badType = bytes
        badType[4] = 0x42  // not a BSON type byte
        #expect(throws: MongoError.self) { try BSONDocument(bytes: badType) }
        var longString = BSONDocument(["s": "ab"]).bytes
        longString[7] = 0x40  // the string's length now runs past the document's end
        #expect(throws: MongoError.self) { try BSONDocument(bytes: longString) }
        var badUTF8 = BSONDocument(["s": "ab"]).bytes
        badUTF8[badUTF8.count - 3] = 0xFF
        let error = #expect(throws: MongoError.self) { try BSONDocument(bytes: badUTF8) }
        #expect(error?.code == .invalidBSON)
        var badNestedUTF8 = BSONDocument(["d": ["k": ["ab"]]]).bytes
        badNestedUTF8[badNestedUTF8.count - 5] = 0xC3  // a lead byte with no continuation
        #expect(throws: MongoError.self) { try BSONDocument(bytes: badNestedUTF8) }
    }

    @Test func objectIDsParseOnlyTwentyFourHexDigits() {
        let id = ObjectID()
        #expect(ObjectID(hex: id.hex) == id)
        #expect(ObjectID(hex: id.hex.uppercased()) == id)
        #expect(ObjectID(hex: "5a1b2c3d4e5f60718293a4b") == nil)
        #expect(ObjectID(hex: "5a1b2c3d4e5f60718293a4bz") == nil)
        #expect(ObjectID(hex: "") == nil)
        #expect(ObjectID(hex: "5a1b2c3d4e5f60718293a4b5")?.timestampSeconds == 0x5a1b2c3d)
        let ids = (0..<100).map { _ in ObjectID() }
        #expect(Set(ids).count == 100)
    }

    @Test func theFirstObjectIDOfASecondSortsAfterEveryEarlierOne() {
        let first = ObjectID(firstOfSecond: 0x5a1b_2c3d)
        #expect(first.hex == "5a1b2c3d0000000000000000" && first.timestampSeconds == 0x5a1b_2c3d)
        #expect(ObjectID(hex: "5a1b2c3cffffffffffffffff")! < first)
        #expect(!(ObjectID(hex: "5a1b2c3d0000000000000001")! < first))
        let now = ObjectID()
        #expect(ObjectID(firstOfSecond: now.timestampSeconds) <= now)
        #expect(now < ObjectID(firstOfSecond: now.timestampSeconds + 1))
    }

    @Test func decimal128SpellsItself() {
        #expect(BSONDecimal128("1.5E+3")?.description == "1.5E+3")
        #expect(BSONDecimal128("not a number") == nil)
    }
}

@testable import Mongo
import Testing

@Suite("JSON in the legacy hub's shape")
struct LegacyJSONWriterTests {
    let writer = LegacyJSONWriter()

    @Test func writesObjectIDsAsHexAndNumbersAsNumbers() {
        let id = ObjectID(hex: "5a1b2c3d4e5f60718293a4b5")!
        let document: BSONDocument = [
            "_id": .objectID(id), "count": 3, "big": .int64(1_700_000_000_123),
            "when": .datetime(1_700_000_000_123), "ratio": 0.5, "whole": 2.0, "flag": true, "none": nil,
            "list": [1, "a"], "nested": ["x": "y"],
        ]
        #expect(
            writer.string(document) == #"{"_id":"5a1b2c3d4e5f60718293a4b5","count":3,"big":1700000000123,"#
                + #""when":"2023-11-14T22:13:20.123Z","ratio":0.5,"whole":2,"flag":true,"none":null,"list":[1,"a"],"#
                + #""nested":{"x":"y"}}"#)
    }

    @Test func escapesStringsAsJavaScriptDoes() {
        let document: BSONDocument = ["s": "quote\" back\\ nl\n tab\t bell\u{07} é 😀 </script>"]
        #expect(writer.string(document) == #"{"s":"quote\" back\\ nl\n tab\t bell\u0007 é 😀 </script>"}"#)
    }

    /// `new Date(ms).toJSON()`: UTC, milliseconds, six-digit signed years outside 0...9999, null past ±8.64e15.
    @Test(arguments: [
        (Int64(0), #""1970-01-01T00:00:00.000Z""#),
        (1_503_910_800_000, #""2017-08-28T09:00:00.000Z""#),
        (951_782_400_000, #""2000-02-29T00:00:00.000Z""#),
        (-1, #""1969-12-31T23:59:59.999Z""#),
        (-86_400_001, #""1969-12-30T23:59:59.999Z""#),
        (-62_167_219_200_000, #""0000-01-01T00:00:00.000Z""#),
        (-62_198_755_200_000, #""-000001-01-01T00:00:00.000Z""#),
        (-62_198_755_200_001, #""-000002-12-31T23:59:59.999Z""#),
        (253_402_300_799_999, #""9999-12-31T23:59:59.999Z""#),
        (253_402_300_800_000, #""+010000-01-01T00:00:00.000Z""#),
        (327_403_382_400_123, #""+012345-01-01T00:00:00.123Z""#),
        (8_640_000_000_000_000, #""+275760-09-13T00:00:00.000Z""#),
        (-8_640_000_000_000_000, #""-271821-04-20T00:00:00.000Z""#),
        (8_640_000_000_000_001, "null"),
        (-8_640_000_000_000_001, "null"),
        (.max, "null"),
        (.min, "null"),
    ])
    func datesAreTheISOStringsJavaScriptGives(milliseconds: Int64, json: String) {
        #expect(writer.string(["d": .datetime(milliseconds)]) == #"{"d":"# + json + "}")
    }

    /// `Decimal128.prototype.toJSON`: `{$numberDecimal: toString()}`, the spec's canonical string.
    @Test(arguments: [
        ("1.10", "1.10"), ("-0", "-0"), ("1E+3", "1E+3"), ("1000", "1000"), ("NaN", "NaN"),
        ("-Infinity", "-Infinity"), ("0.0000001", "1E-7"), ("0.000001", "0.000001"),
        ("12345678901234567890.5", "12345678901234567890.5"),
    ])
    func decimalsAreNumberDecimalObjects(decimal: String, canonical: String) throws {
        let value = try #require(BSONDecimal128(decimal))
        #expect(writer.string(["n": .decimal128(value)]) == #"{"n":{"$numberDecimal":""# + canonical + #""}}"#)
    }

    @Test func aNegativeNaNDecimalIsNaN() {
        let negativeNaN = BSONDecimal128(high: 0xFC00_0000_0000_0000, low: 0)
        #expect(writer.string(["n": .decimal128(negativeNaN)]) == #"{"n":{"$numberDecimal":"NaN"}}"#)
    }

    /// Doubles as `Number::toString`; int64 a number within ±2^53 and a js-bson `Long` (its string) beyond.
    @Test(arguments: [
        (BSONValue.double(1.0), "1"), (.double(-0.0), "0"), (.double(0.5), "0.5"), (.double(-1234.5678), "-1234.5678"),
        (.double(0.1 + 0.2), "0.30000000000000004"), (.double(1e15), "1000000000000000"),
        (.double(1e16), "10000000000000000"), (.double(1e20), "100000000000000000000"),
        (.double(123_456_789_012_345_680_000), "123456789012345680000"), (.double(1e21), "1e+21"),
        (.double(1.5e300), "1.5e+300"), (.double(0.000001), "0.000001"), (.double(1e-7), "1e-7"),
        (.double(-1.5e-7), "-1.5e-7"), (.double(5e-324), "5e-324"),
        (.double(.greatestFiniteMagnitude), "1.7976931348623157e+308"),
        (.double(.nan), "null"), (.double(.infinity), "null"), (.double(-.infinity), "null"),
        (.int32(.min), "-2147483648"), (.int64(9_007_199_254_740_992), "9007199254740992"),
        (.int64(-9_007_199_254_740_992), "-9007199254740992"), (.int64(9_007_199_254_740_993), #""9007199254740993""#),
        (.int64(-9_007_199_254_740_993), #""-9007199254740993""#), (.int64(.min), #""-9223372036854775808""#),
    ])
    func numbersAreWhatJavaScriptPrints(value: BSONValue, json: String) {
        #expect(writer.string(["n": value]) == #"{"n":"# + json + "}")
    }

    @Test func theRarerTypesAreWhatTheDriversToJSONGave() throws {
        let id = ObjectID(hex: "5a1b2c3d4e5f60718293a4b5")!
        let document: BSONDocument = [
            "bin": .binary(BSONBinary(data: Array("hello".utf8))), "empty": .binary(BSONBinary(data: [])),
            "uuid": .binary(
                BSONBinary(
                    subtype: 4,
                    data: [
                        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99,
                        0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
                    ])),
            "re": .regex(BSONRegex(pattern: "a+", options: "i")), "sym": .symbol("s"),
            "ts": .timestamp(BSONTimestamp(seconds: 1_503_910_800, increment: 1)),
            "late": .timestamp(BSONTimestamp(seconds: 0x9000_0000, increment: 7)),
            "code": .javascript("function () {}"), "scoped": .javascriptWithScope(code: "x", scope: ["x": 1]),
            "min": .minKey, "max": .maxKey, "gone": .undefined, "holes": [.undefined, 1],
            "ptr": .dbPointer(collection: "msi.icube", id: id), "bare": .dbPointer(collection: "nodot", id: id),
            "ref": ["$ref": "users", "$id": .objectID(id), "extra": 1], "noref": ["$id": nil, "a": 1],
        ]
        #expect(
            writer.string(document) == #"{"bin":"aGVsbG8=","empty":"","uuid":"ABEiM0RVZneImaq7zN3u/w==","#
                + #""re":{},"sym":"s","ts":"6459247702101196801","late":"-8070450532247928825","#
                + #""code":{"code":"function () {}"},"scoped":{"scope":{"x":1},"code":"x"},"#
                + #""min":{"_bsontype":"MinKey"},"max":{"_bsontype":"MaxKey"},"holes":[null,1],"#
                + #""ptr":{"$ref":"icube","$id":"5a1b2c3d4e5f60718293a4b5","$db":"msi"},"#
                + #""bare":{"$ref":"","$id":"5a1b2c3d4e5f60718293a4b5","$db":"nodot"},"#
                + #""ref":{"$ref":"users","$id":"5a1b2c3d4e5f60718293a4b5","$db":""},"noref":{"$id":null,"a":1}}"#)
    }

    /// Bytes that js-bson 1.1.6 (the legacy hub's driver) serialised, and `JSON.stringify` of what its
    /// deserializer made of them, with default options: `fixtures/legacy-json-oracle.js` wrote both.
    @Test(arguments: LegacyJSONOracle.cases)
    func bytesTheLegacyDriverReadComeOutAsTheLegacyHubServedThem(hex: String, json: String) throws {
        let document = try BSONDocument(bytes: try #require(LegacyJSONOracle.bytes(hex: hex)))
        #expect(writer.string(document) == json)
    }
}

@Suite("Parsing client JSON")
struct JSONParserTests {
    let parser = JSONParser()

    @Test func parsesObjectsIntoOrderedDocuments() throws {
        let document = try parser.document(
            from: Array(
                #" {"name": "Math", "n": 5, "big": 10000000000, "x": 1.5, "e": 1e3, "ok": true, "no": null, "list": [1, {"a": []}]} "#
                    .utf8))
        #expect(document.keys == ["name", "n", "big", "x", "e", "ok", "no", "list"])
        #expect(document["name"] == "Math")
        #expect(document["n"] == .int32(5))
        #expect(document["big"] == .int64(10_000_000_000))
        #expect(document["x"] == .double(1.5))
        #expect(document["e"] == .double(1000))
        #expect(document["ok"] == true)
        #expect(document["no"] == .null)
        #expect(document["list"] == [1, ["a": []]])
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let document = try parser.document(from: Array(#"{"s": "a\"b\\c\/d\n\u00e9\ud83d\ude00"}"#.utf8))
        #expect(document["s"] == "a\"b\\c/d\né😀")
    }

    @Test(arguments: [
        #"{"$set": {"a": 1}}"#,
        #"{"a": {"$gt": 1}}"#,
        #"{"a.b": 1}"#,
        #"{"list": [{"$where": "1"}]}"#,
        #"{"a\u0000b": 1}"#,
    ])
    func refusesOperatorAndPathKeys(json: String) {
        let error = #expect(throws: JSONParseError.self) { try parser.document(from: Array(json.utf8)) }
        #expect(error?.code == .forbiddenKey)
    }

    @Test(arguments: [
        "", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "[1,]", #"{"a":tru}"#, #"{"a":01}"#, #"{"a":1.}"#,
        #"{"a":"\x"}"#, "{\"a\":\"\u{01}\"}", #"{"a":"\ud800"}"#, #"{"a":1} x"#, "1e999", #"{'a':1}"#,
    ])
    func refusesMalformedJSON(json: String) {
        let error = #expect(throws: JSONParseError.self) { try parser.value(from: Array(json.utf8)) }
        #expect(error?.code == .malformed)
    }

    @Test func refusesInvalidUTF8AndNonObjects() {
        #expect(throws: JSONParseError.self) { try parser.document(from: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) }
        let error = #expect(throws: JSONParseError.self) { try parser.document(from: Array("[1, 2]".utf8)) }
        #expect(error?.code == .notAnObject)
    }

    @Test func refusesNestingDeeperThanTheLimit() throws {
        let shallow = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        _ = try parser.value(from: Array(shallow.utf8))
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        let error = #expect(throws: JSONParseError.self) { try parser.value(from: Array(deep.utf8)) }
        #expect(error?.code == .tooDeep)
        let hostile = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: JSONParseError.self) { try parser.value(from: Array(hostile.utf8)) }
    }

    @Test func refusesAKeyGivenTwiceInOneObject() throws {
        let error = #expect(throws: JSONParseError.self) {
            try parser.document(from: Array(#"{"a": 1, "b": {"c": 2}, "a": 3}"#.utf8))
        }
        #expect(error?.code == .duplicateKey)
        #expect(error?.key == "a")
        // The same key in two objects is no repetition.
        let document = try parser.document(from: Array(#"{"a": {"x": 1}, "b": {"x": 2}}"#.utf8))
        #expect(document.keys == ["a", "b"])
    }
}

@Suite("Extended JSON")
struct ExtendedJSONTests {
    @Test func readsLegacyAndV2Forms() throws {
        let legacy = try BSONDocument(
            extendedJSON:
                #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": 1500000000000}, "n": {"$numberLong": "12"}}"#
        )
        let canonical = try BSONDocument(
            extendedJSON:
                #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": {"$numberLong": "1500000000000"}}, "n": {"$numberLong": "12"}}"#
        )
        let relaxed = try BSONDocument(
            extendedJSON:
                #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": "2017-07-14T02:40:00Z"}, "n": {"$numberLong": "12"}}"#
        )
        for document in [legacy, canonical, relaxed] {
            #expect(document["_id"] == .objectID(ObjectID(hex: "5a1b2c3d4e5f60718293a4b5")!))
            #expect(document["t"] == .datetime(1_500_000_000_000))
            #expect(document["n"] == .int64(12))
        }
    }

    @Test func refusesMalformedExtendedJSON() {
        let error = #expect(throws: MongoError.self) { try BSONDocument(extendedJSON: #"{"a": {"$oid": "nothex"}}"#) }
        #expect(error?.code == .invalidJSON)
    }
}

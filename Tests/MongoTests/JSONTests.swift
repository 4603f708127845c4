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
        #expect(writer.string(document) == #"{"_id":"5a1b2c3d4e5f60718293a4b5","count":3,"big":1700000000123,"#
            + #""when":1700000000123,"ratio":0.5,"whole":2,"flag":true,"none":null,"list":[1,"a"],"nested":{"x":"y"}}"#)
    }

    @Test func escapesStringsAsJavaScriptDoes() {
        let document: BSONDocument = ["s": "quote\" back\\ nl\n tab\t bell\u{07} é 😀 </script>"]
        #expect(writer.string(document) == #"{"s":"quote\" back\\ nl\n tab\t bell\u0007 é 😀 </script>"}"#)
    }

    @Test func writesTheRarerTypesNaturally() {
        let document: BSONDocument = [
            "bin": .binary(BSONBinary(data: Array("hello".utf8))), "re": .regex(BSONRegex(pattern: "a+", options: "i")),
            "dec": .decimal128(BSONDecimal128("1.25")!), "nan": .double(.nan), "min": .minKey,
        ]
        #expect(writer.string(document) == #"{"bin":"aGVsbG8=","re":"/a+/i","dec":"1.25","nan":null,"min":null}"#)
    }
}

@Suite("Parsing client JSON")
struct JSONParserTests {
    let parser = JSONParser()

    @Test func parsesObjectsIntoOrderedDocuments() throws {
        let document = try parser.document(from: Array(#" {"name": "Math", "n": 5, "big": 10000000000, "x": 1.5, "e": 1e3, "ok": true, "no": null, "list": [1, {"a": []}]} "#.utf8))
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
        let error = #expect(throws: JSONParseError.self) { try parser.document(from: Array(#"{"a": 1, "b": {"c": 2}, "a": 3}"#.utf8)) }
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
        let legacy = try BSONDocument(extendedJSON: #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": 1500000000000}, "n": {"$numberLong": "12"}}"#)
        let canonical = try BSONDocument(extendedJSON: #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": {"$numberLong": "1500000000000"}}, "n": {"$numberLong": "12"}}"#)
        let relaxed = try BSONDocument(extendedJSON: #"{"_id": {"$oid": "5a1b2c3d4e5f60718293a4b5"}, "t": {"$date": "2017-07-14T02:40:00Z"}, "n": {"$numberLong": "12"}}"#)
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

import Mongo

/// BSON that the legacy hub's driver (js-bson 1.1.6, as the Node.js driver 3.x used it) read, and the JSON the
/// hub served for it: `JSON.stringify` of the driver's `deserialize` with default options. Written by
/// `node fixtures/legacy-json-oracle.js PATH-TO-js-bson-1.1.6`; the first document is the driver's own
/// serialisation, the second is made by hand for the types it does not write (undefined, DBPointer).
enum LegacyJSONOracle {
    static let cases: [(hex: String, json: String)] = [
        (
            "37020000075f6964005a1b2c3d4e5f60718293a4b50965706f6368000000000000000000097768656e0080aa11285e010000"
                + "096265666f726500ffffffffffffffff097931306b0000dc1fd277e600001364656331006e00000000000000000000000000"
                + "3c30136465633200000000000000000000000000000040b01364656333000100000000000000000000000000463013646563"
                + "34000000000000000000000000000000007c1364656335000100000000000000000000000000323012626967000100000000"
                + "0020001265646765000000000000002000126e656700ffffffffffffdfff12736d616c6c000c000000000000001064310001"
                + "00000001643200000000000000e03f0164330050efe2d6e41a4b4401643400010000000000f07f01643500000000000000f0"
                + "ff0164360048afbc9af2d77a3e0562696e00050000000068656c6c6f057575696400100000000400112233445566778899aa"
                + "bbccddeeff056f6c6400070000000203000000010203117473000100000090dba3590d636f6465000f00000066756e637469"
                + "6f6e202829207b7d000f73636f70656400160000000200000078000c0000001078000100000000ff6d696e007f6d6178000b"
                + "726500612b0069000372656600260000000224726566000600000075736572730007246964005a1b2c3d4e5f60718293a4b5"
                + "0003726566320025000000022472656600020000006300102469640005000000106578747261000100000000036e69640011"
                + "0000000a24696400106100010000000000",
            #"{"_id":"5a1b2c3d4e5f60718293a4b5","epoch":"1970-01-01T00:00:00.000Z","#
                + #""when":"2017-08-28T09:00:00.000Z","before":"1969-12-31T23:59:59.999Z","#
                + #""y10k":"+010000-01-01T00:00:00.000Z","dec1":{"$numberDecimal":"1.10"},"#
                + #""dec2":{"$numberDecimal":"-0"},"dec3":{"$numberDecimal":"1E+3"},"#
                + #""dec4":{"$numberDecimal":"NaN"},"dec5":{"$numberDecimal":"1E-7"},"big":"9007199254740993","#
                + #""edge":9007199254740992,"neg":"-9007199254740993","small":12,"d1":1,"d2":0.5,"d3":1e+21,"#
                + #""d4":null,"d5":null,"d6":1e-7,"bin":"aGVsbG8=","uuid":"ABEiM0RVZneImaq7zN3u/w==","#
                + #""old":"AQID","ts":"6459247702101196801","code":{"code":"function () {}"},"#
                + #""scoped":{"scope":{"x":1},"code":"x"},"min":{"_bsontype":"MinKey"},"#
                + #""max":{"_bsontype":"MaxKey"},"re":{},"ref":{"$ref":"users","#
                + #""$id":"5a1b2c3d4e5f60718293a4b5","$db":""},"ref2":{"$ref":"c","$id":5,"$db":""},"#
                + #""nid":{"$id":null,"a":1}}"#
        ),
        (
            "fb0000000675000461000f00000006300010310001000000000c70000a0000006d73692e6963756265005a1b2c3d4e5f6071"
                + "8293a4b50c7100060000006e6f646f74005a1b2c3d4e5f60718293a4b50979656172300000a0fb9075c7ffff096661720001"
                + "00dcc208b21e00096669727374000000243df74de1ff09793132333435007b644e8ac529010009626300ff734a396ec7ffff"
                + "126c6d696e000000000000000080117473000700000000000090037200300000000224726566000200000063000724696400"
                + "5a1b2c3d4e5f60718293a4b50a24646200027800020000007900000373001400000006247265660010246964000000000000"
                + "00",
            #"{"a":[null,1],"p":{"$ref":"icube","$id":"5a1b2c3d4e5f60718293a4b5","$db":"msi"},"#
                + #""q":{"$ref":"","$id":"5a1b2c3d4e5f60718293a4b5","$db":"nodot"},"#
                + #""year0":"0000-01-01T00:00:00.000Z","far":null,"first":"-271821-04-20T00:00:00.000Z","#
                + #""y12345":"+012345-01-01T00:00:00.123Z","bc":"-000002-12-31T23:59:59.999Z","#
                + #""lmin":"-9223372036854775808","ts":"-8070450532247928825","r":{"$ref":"c","#
                + #""$id":"5a1b2c3d4e5f60718293a4b5","$db":""},"s":{"$id":0,"$db":""}}"#
        ),
    ]

    /// The bytes a string of hex digits spells, or nil.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return try? stride(from: 0, to: digits.count, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
                throw MongoError(.invalidArgument, "not hex")
            }
            return byte
        }
    }
}

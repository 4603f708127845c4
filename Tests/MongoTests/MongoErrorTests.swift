import CMongo
import Mongo
import Testing

@Suite("Mapping libmongoc's errors")
struct MongoErrorTests {
    @Test(arguments: [40573, 40324, 115] as [UInt32])
    func aServerWithoutChangeStreamsIsUnsupported(code: UInt32) {
        #expect(MongoError.code(domain: MONGOC_ERROR_SERVER.rawValue, code: code) == .unsupported)
    }

    @Test(arguments: [43, 11601, 136, 280] as [UInt32])
    func transientServerFailuresAreNotUnsupported(code: UInt32) {
        // CursorNotFound, Interrupted, CappedPositionLost, ChangeStreamFatalError: the stream is opened again.
        #expect(MongoError.code(domain: MONGOC_ERROR_SERVER.rawValue, code: code) == .commandFailed)
    }

    @Test func aLostConnectionIsNetwork() {
        #expect(MongoError.code(domain: MONGOC_ERROR_STREAM.rawValue, code: 1) == .network)
        #expect(MongoError.code(domain: MONGOC_ERROR_SERVER.rawValue, code: 11000) == .duplicateKey)
    }
}

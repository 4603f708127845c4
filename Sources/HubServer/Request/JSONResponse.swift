import Hummingbird
import Mongo
import NIOCore

/// JSON answers in the legacy hub's shape, written straight from BSON.
enum JSONResponse {
    /// A response whose body is `value` as legacy JSON.
    static func make(_ value: BSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(LegacyJSONWriter().bytes(value), status: status, headers: headers)
    }

    /// A response whose body is already-serialised JSON.
    static func json(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

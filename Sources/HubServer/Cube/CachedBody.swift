import Foundation
import CompressNIO
import Crypto
import Hummingbird
import NIOCore

/// A response body prepared once per cube version: plain and gzip bytes and a strong ETag.
struct CachedBody: Sendable {
    let plain: ByteBuffer
    let gzip: ByteBuffer
    /// The ETag of the plain bytes (quoted); the gzip bytes carry it with a `-gz` suffix.
    let etag: String

    init(json: [UInt8]) throws {
        self.plain = ByteBuffer(bytes: json)
        var input = plain
        self.gzip = try input.compress(with: .gzip())
        self.etag = Self.etag(of: json)
    }

    /// The strong ETag of `json`: a hash of the content, so every replica gives the same version the same tag.
    static func etag(of json: [UInt8]) -> String {
        let digest = SHA256.hash(data: json).prefix(16).map { String(format: "%02x", $0) }.joined()
        return "\"\(digest)\""
    }

    var gzipETag: String { "\"\(etag.dropFirst().dropLast())-gz\"" }

    /// What a GET or HEAD of this body answers: status, headers, and the bytes to send (none for a
    /// 304 or a HEAD). Computed from the request's headers alone, so the network thread's fast path
    /// (`CubeChannelHandler`) and the router give the same answer.
    struct Answer {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer?
    }

    /// The answer to a request with these headers: 304 when `If-None-Match` names this version, gzip
    /// when accepted; `head` leaves the body out but keeps its length.
    func answer(head: Bool, headers requestHeaders: HTTPFields) -> Answer {
        let wantsGzip = Self.acceptsGzip(requestHeaders[.acceptEncoding])
        var headers: HTTPFields = [
            .eTag: wantsGzip ? gzipETag : etag,
            .cacheControl: "public, no-cache",
            .vary: "Accept-Encoding",
        ]
        if let match = requestHeaders[.ifNoneMatch], Self.matches(match, etag: etag, gzipETag: gzipETag) {
            return Answer(status: .notModified, headers: headers, body: nil)
        }
        let body = wantsGzip ? gzip : plain
        headers[.contentType] = "application/json; charset=utf-8"
        if wantsGzip { headers[.contentEncoding] = "gzip" }
        headers[.contentLength] = String(body.readableBytes)
        return Answer(status: .ok, headers: headers, body: head ? nil : body)
    }

    /// The answer to `request` as a router response.
    func response(to request: Request) -> Response {
        let answer = answer(head: request.method == .head, headers: request.headers)
        return Response(status: answer.status, headers: answer.headers,
                        body: answer.body.map { ResponseBody(byteBuffer: $0) } ?? ResponseBody())
    }

    /// Whether an `If-None-Match` list names either variant of this version (weak comparison, RFC 9110).
    static func matches(_ header: String, etag: String, gzipETag: String) -> Bool {
        // The common case, a phone sending back the one tag it was given, without parsing a list.
        if header == etag || header == gzipETag { return true }
        return header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingSpaces
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag || tag == gzipETag
        }
    }

    /// Whether `Accept-Encoding` accepts gzip (and does not refuse it with `q=0`).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.lowercased().split(separator: ",").contains { coding in
            let parts = coding.split(separator: ";").map { $0.trimmingSpaces }
            guard parts.first == "gzip" || parts.first == "x-gzip" else { return false }
            return !parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" || $0 == "q=0.0" }
        }
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

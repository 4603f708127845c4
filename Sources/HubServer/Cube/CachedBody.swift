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

    /// The answer to `request`: 304 when its `If-None-Match` names this version, gzip when accepted.
    func response(to request: Request) -> Response {
        let wantsGzip = Self.acceptsGzip(request.headers[.acceptEncoding])
        let tag = wantsGzip ? gzipETag : etag
        var headers: HTTPFields = [
            .eTag: tag,
            .cacheControl: "public, no-cache",
            .vary: "Accept-Encoding",
        ]
        if let match = request.headers[.ifNoneMatch], Self.matches(match, etag: etag, gzipETag: gzipETag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        if wantsGzip {
            headers[.contentEncoding] = "gzip"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: gzip))
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: plain))
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
